// Every file in tests/io/malformed/ must be rejected by the reader with
// exactly the message in its .expected file (written by
// make_malformed_corpus.py), and by TensorFile::Open() too.
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"

namespace kindling::io {
namespace {

constexpr char kCorpus[] = "tests/io/malformed";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

std::vector<std::string> CorpusNames() {
  std::vector<std::string> names;
  if (DIR* dir = ::opendir(kCorpus)) {
    while (dirent* entry = ::readdir(dir)) {
      const std::string name = entry->d_name;
      const std::string suffix = ".safetensors";
      if (name.size() > suffix.size() &&
          name.compare(name.size() - suffix.size(), suffix.size(), suffix) ==
              0) {
        names.push_back(name);
      }
    }
    ::closedir(dir);
  }
  std::sort(names.begin(), names.end());
  return names;
}

TEST(MalformedCorpusTest, HasAtLeastTwentyCases) {
  EXPECT_GE(CorpusNames().size(), 20u);
}

TEST(MalformedCorpusTest, EachFileGivesItsExactError) {
  for (const std::string& name : CorpusNames()) {
    SCOPED_TRACE(name);
    const std::string bytes = ReadFile(std::string(kCorpus) + "/" + name);
    std::string expected =
        ReadFile(std::string(kCorpus) + "/" + name.substr(0, name.size() - 12) +
                 ".expected");
    while (!expected.empty() && expected.back() == '\n') expected.pop_back();
    ASSERT_FALSE(expected.empty()) << "no .expected for " << name;
    absl::StatusOr<SafetensorsHeader> header = ParseSafetensors(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                 bytes.size()),
        name);
    ASSERT_FALSE(header.ok());
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, header.status().code());
    EXPECT_EQ(expected, std::string(header.status().message()));

    // TensorFile::Open() maps the file and gives the same error, naming
    // the path it was given instead of the bare label.
    const std::string path = std::string(kCorpus) + "/" + name;
    ASSERT_EQ(0, expected.compare(0, name.size(), name)) << expected;
    absl::StatusOr<std::shared_ptr<const TensorFile>> file =
        TensorFile::Open(path);
    ASSERT_FALSE(file.ok());
    EXPECT_EQ(absl::StatusCode::kInvalidArgument, file.status().code());
    EXPECT_EQ(path + expected.substr(name.size()),
              std::string(file.status().message()));
  }
}

}  // namespace
}  // namespace kindling::io
