// Tests of the kindling-inspect command (RunInspect()).
#include "kindling/io/inspect.h"

#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/json.h"
#include "kindling/io/safetensors.h"

namespace kindling::io {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

std::string WriteSample() {
  const char* dir = std::getenv("TEST_TMPDIR");
  const std::string path =
      std::string(dir != nullptr ? dir : "/tmp") + "/sample.safetensors";
  uint64_t data_size = 0;
  absl::StatusOr<std::string> header =
      EncodeSafetensorsHeader({{"fc.weight", SafetensorsDType::kF32, {2, 3}},
                               {"fc.bias", SafetensorsDType::kBF16, {3}}},
                              {{"kindling.module", "demo::Net"}}, &data_size);
  std::ofstream out(path, std::ios::binary);
  out << *header << std::string(data_size, '\0');
  return path;
}

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result Inspect(std::vector<std::string> args) {
  std::ostringstream out, err;
  const int code = RunInspect(args, out, err);
  return {code, out.str(), err.str()};
}

TEST(InspectTest, PrintsTableMetadataAndTotals) {
  const Result result = Inspect({WriteSample()});
  EXPECT_EQ(0, result.code);
  EXPECT_THAT(result.out, HasSubstr("fc.weight"));
  EXPECT_THAT(result.out, HasSubstr("[2, 3]"));
  EXPECT_THAT(result.out, HasSubstr("BF16"));
  EXPECT_THAT(result.out, HasSubstr("kindling.module = demo::Net"));
  EXPECT_THAT(result.out, HasSubstr("total: 2 tensors, 9 elements, 30 data "
                                    "bytes"));
  EXPECT_EQ("", result.err);
}

TEST(InspectTest, JsonOutputParses) {
  const Result result = Inspect({"--json", WriteSample()});
  EXPECT_EQ(0, result.code);
  absl::StatusOr<JsonValue> json = ParseJson(result.out);
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_EQ(2u, json->Find("tensors")->array.size());
  EXPECT_EQ(9u, json->Find("totals")->Find("elements")->integer);
  EXPECT_EQ("demo::Net",
            json->Find("metadata")->Find("kindling.module")->string);
}

// A torch.save file (torch 1.13's, from the fuzzer's seeds): the same
// reader LoadModule uses, told from its first bytes.
TEST(InspectTest, ReadsTorchSaveFiles) {
  const std::string path = "tests/io/torch_corpus/tied_net_1.13.pt";
  const Result table = Inspect({path});
  EXPECT_EQ(0, table.code) << table.err;
  EXPECT_THAT(table.out, HasSubstr("encoder.weight"));
  EXPECT_THAT(table.out, HasSubstr("I64"));  // num_batches_tracked
  EXPECT_THAT(table.out, HasSubstr("total: 9 tensors"));
  EXPECT_THAT(table.out, HasSubstr("(torch.save zip)"));
  const Result json = Inspect({"--json", path});
  EXPECT_EQ(0, json.code);
  absl::StatusOr<JsonValue> parsed = ParseJson(json.out);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ("torch.save", parsed->Find("totals")->Find("format")->string);
  const Result refused = Inspect({"tests/io/torch_corpus/evil.pt"});
  EXPECT_EQ(1, refused.code);
  EXPECT_THAT(refused.err, HasSubstr("global 'posix.system'"));
}

TEST(InspectTest, UsageErrorsExitTwo) {
  EXPECT_EQ(2, Inspect({}).code);
  EXPECT_EQ(2, Inspect({"--bogus", "x"}).code);
  EXPECT_EQ(2, Inspect({"a", "b"}).code);
}

TEST(InspectTest, MissingFileExitsOneWithOneLine) {
  const Result result = Inspect({"/nonexistent/x.safetensors"});
  EXPECT_EQ(1, result.code);
  EXPECT_THAT(result.err, StartsWith("error: /nonexistent/x.safetensors"));
  EXPECT_EQ(1, std::count(result.err.begin(), result.err.end(), '\n'));
}

TEST(InspectTest, EveryMalformedFileExitsOneWithTheReadersError) {
  int checked = 0;
  DIR* dir = ::opendir("tests/io/malformed");
  ASSERT_NE(nullptr, dir);
  while (dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.find(".safetensors") == std::string::npos) continue;
    const std::string path = "tests/io/malformed/" + name;
    const Result result = Inspect({path});
    EXPECT_EQ(1, result.code) << name;
    EXPECT_EQ("", result.out) << name;
    EXPECT_THAT(result.err, StartsWith("error: " + path + ": ")) << name;
    EXPECT_EQ(1, std::count(result.err.begin(), result.err.end(), '\n'))
        << name;
    ++checked;
  }
  ::closedir(dir);
  EXPECT_GE(checked, 20);
}

}  // namespace
}  // namespace kindling::io
