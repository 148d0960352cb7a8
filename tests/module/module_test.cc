// runtime/module's generic walks over hand-written ModuleTraits: paths,
// counts, laziness through every metadata-only operation, mapping, records.
#include "kindling/module/module.h"

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/module/test_modules.h"

namespace kindling {
namespace {

using ::demo::CountingParam;
using ::demo::CountingParameter;
using ::kindling::testing::Counters;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> ParamPaths(const demo::Net& net) {
  std::vector<std::string> paths;
  VisitParams(net, [&](std::string_view path, const CountingParam&) {
    paths.emplace_back(path);
  });
  return paths;
}

int CountInitialized(const demo::Net& net) {
  int initialized = 0;
  VisitParams(net, [&](std::string_view, const CountingParam& param) {
    initialized += param.is_initialized();
  });
  return initialized;
}

class ModuleTest : public ::testing::Test {
 protected:
  void SetUp() override { Counters::Reset(); }
};

TEST_F(ModuleTest, VisitParamsGivesDottedPathsInDeclarationOrder) {
  EXPECT_THAT(ParamPaths(demo::MakeNet()),
              ElementsAre("fc1.weight", "fc1.bias", "hidden.0.weight",
                          "hidden.0.bias", "hidden.1.weight", "head.weight",
                          "head.bias", "pair.0.weight", "pair.0.bias",
                          "pair.1.weight", "pair.1.bias"));
}

TEST_F(ModuleTest, VariantAlternativeWithParamsIsVisited) {
  demo::Net net = demo::MakeNet();
  net.choice = demo::MakeDense(1, 1, /*bias=*/false);
  EXPECT_EQ("choice.weight", ParamPaths(net).back());
}

TEST_F(ModuleTest, VisitBuffersFindsRunningState) {
  std::vector<std::string> paths;
  VisitBuffers(demo::MakeNet(), [&](std::string_view path, const auto&) {
    paths.emplace_back(path);
  });
  EXPECT_THAT(paths, ElementsAre("running_mean"));
}

TEST_F(ModuleTest, NumParamsReadsLazyShapesWithoutInitializing) {
  const demo::Net net = demo::MakeNet();
  // fc1 8*4+8, hidden 8*8+8 and 8*8, head 2*8+2, pair 2*(2*2+2).
  EXPECT_EQ(40 + 72 + 64 + 18 + 12, NumParams(net));
  EXPECT_EQ(0, CountInitialized(net));
  EXPECT_EQ(0, Counters::init_calls().load());
}

TEST_F(ModuleTest, DevicesReadsLazyDevicesWithoutInitializing) {
  demo::Net net = demo::MakeNet();
  net.head = demo::MakeDense(8, 2, true, /*device=*/5);
  EXPECT_THAT(Devices<int>(net), ElementsAre(0, 5));
  EXPECT_EQ(0, Counters::init_calls().load());
}

TEST_F(ModuleTest, ToDeviceRetargetsLazyParamsAndMovesBuffers) {
  const demo::Net net = demo::MakeNet();
  const demo::Net moved = ToDevice(net, 3);
  EXPECT_EQ(0, CountInitialized(moved));
  EXPECT_THAT(Devices<int>(moved), ElementsAre(3));
  EXPECT_THAT(Devices<int>(net), ElementsAre(0));
  EXPECT_EQ(3, moved.running_mean.lazy_device());
  EXPECT_EQ(0, net.running_mean.lazy_device());
  EXPECT_EQ(0, Counters::init_calls().load());
  EXPECT_EQ(3, moved.fc1.weight->device());  // initialized on device 3
}

TEST_F(ModuleTest, ToDeviceKeepsTiedWeightsTied) {
  demo::Net net = demo::MakeNet();
  net.pair[1].weight = net.pair[0].weight;  // tie
  const demo::Net moved = ToDevice(net, 1);
  EXPECT_TRUE(moved.pair[0].weight.shares_state_with(moved.pair[1].weight));
  EXPECT_FALSE(moved.pair[0].bias->shares_state_with(*moved.pair[1].bias));
}

TEST_F(ModuleTest, ForkOfALazyModuleIsLazyOnTheDeviceWithTheSameValues) {
  const demo::Net net = demo::MakeNet();
  const demo::Net forked = Fork(net, 2);
  EXPECT_THAT(Devices<int>(forked), ElementsAre(2));
  EXPECT_EQ(0, CountInitialized(forked));
  EXPECT_FALSE(forked.fc1.weight.shares_state_with(net.fc1.weight));
  // One init run feeds the original and the fork; storage is separate.
  EXPECT_EQ(net.fc1.weight->data(), forked.fc1.weight->data());
  EXPECT_NE(net.fc1.weight->storage_address(),
            forked.fc1.weight->storage_address());
  EXPECT_EQ(2, forked.fc1.weight->device());
  EXPECT_EQ(1, Counters::init_calls().load());
}

TEST_F(ModuleTest, ForkKeepsTiedWeightsTied) {
  demo::Net net = demo::MakeNet();
  net.pair[1].weight = net.pair[0].weight;
  const demo::Net forked = Fork(net, 1);
  EXPECT_TRUE(forked.pair[0].weight.shares_state_with(forked.pair[1].weight));
}

TEST_F(ModuleTest, NoGradStaysLazyAndClearsTheFlag) {
  const demo::Net net = demo::MakeNet();
  const demo::Net frozen = NoGrad(net);
  EXPECT_EQ(0, CountInitialized(frozen));
  VisitParams(frozen, [](std::string_view path, const CountingParam& param) {
    EXPECT_FALSE(param.lazy_is_require_grad()) << path;
  });
  EXPECT_TRUE(net.fc1.weight.lazy_is_require_grad());
  EXPECT_FALSE(frozen.fc1.weight->is_require_grad());
}

TEST_F(ModuleTest, ValidIsAFrozenInferenceCopy) {
  const demo::Net net = demo::MakeNet();
  const demo::Net valid = Valid(net);
  EXPECT_FALSE(valid.hidden[0].weight.lazy_is_require_grad());
  EXPECT_EQ(0, CountInitialized(valid));
}

TEST_F(ModuleTest, MapParamsAppliesTheMapperAndKeepsTheOriginal) {
  const demo::Net net = demo::MakeNet();
  const demo::Net doubled =
      MapParams(net, [](std::string_view, const CountingParam& param) {
        return param.map([](CountingParameter p) { return p.Scaled(2.0f); });
      });
  std::vector<float> original;
  std::vector<float> mapped;
  VisitParams(net, [&](std::string_view, const CountingParam& p) {
    original.push_back(p->data()[0]);
  });
  VisitParams(doubled, [&](std::string_view, const CountingParam& p) {
    mapped.push_back(p->data()[0]);
  });
  ASSERT_EQ(original.size(), mapped.size());
  for (size_t i = 0; i < original.size(); ++i) {
    EXPECT_EQ(2.0f * original[i], mapped[i]);
  }
  EXPECT_EQ("net", doubled.label);  // constants are copied
}

TEST_F(ModuleTest, RecordRoundTripRestoresValuesAndIdsWithoutInit) {
  const demo::Net source = demo::MakeNet();
  const demo::NetRecord record = IntoRecord(source);
  const int64_t init_calls_after_save = Counters::init_calls().load();

  demo::Net target = demo::MakeNet();
  ASSERT_TRUE(LoadRecord(target, record).ok());
  EXPECT_EQ(init_calls_after_save, Counters::init_calls().load());
  EXPECT_EQ(source.fc1.weight.id(), target.fc1.weight.id());
  EXPECT_EQ(source.hidden[1].weight->data(), target.hidden[1].weight->data());
  EXPECT_EQ(source.pair[1].bias.value()->data(),
            target.pair[1].bias.value()->data());
  EXPECT_EQ(source.running_mean.id(), target.running_mean.id());
}

TEST_F(ModuleTest, LoadRecordShapeMismatchNamesPathAndShapesAndChangesNothing) {
  demo::Net source = demo::MakeNet();
  source.hidden[0] = demo::MakeDense(8, 16);
  const demo::NetRecord record = IntoRecord(source);

  demo::Net target = demo::MakeNet();
  const ParamId before = target.hidden[0].weight.id();
  const absl::Status status = LoadRecord(target, record);
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(),
              HasSubstr("hidden.0.weight: shape mismatch: the record has "
                        "[16, 8], the module expects [8, 8]"));
  EXPECT_THAT(status.message(), HasSubstr("hidden.0.bias: shape mismatch"));
  EXPECT_THAT(status.message(), HasSubstr("(2 problems)"));
  EXPECT_EQ(before, target.hidden[0].weight.id());
  EXPECT_EQ(0, CountInitialized(target));
}

TEST_F(ModuleTest, LoadRecordReportsMissingValuesAndContainerMismatches) {
  demo::NetRecord record = IntoRecord(demo::MakeNet());
  record.fc1.weight.value.reset();
  record.hidden.pop_back();
  record.head.reset();
  demo::Net target = demo::MakeNet();
  const absl::Status status = LoadRecord(target, record);
  EXPECT_THAT(status.message(),
              HasSubstr("fc1.weight: missing from the record"));
  EXPECT_THAT(status.message(),
              HasSubstr("hidden: the record has 1 entries, the module has 2"));
  EXPECT_THAT(status.message(),
              HasSubstr("head: the record lacks this optional submodule"));
  EXPECT_EQ(0, CountInitialized(target));
}

TEST_F(ModuleTest, LoadRecordVariantAlternativeMismatchIsAnError) {
  demo::Net source = demo::MakeNet();
  source.choice = demo::MakeDense(1, 1);
  demo::Net target = demo::MakeNet();
  const absl::Status status = LoadRecord(target, IntoRecord(source));
  EXPECT_THAT(status.message(),
              HasSubstr("choice: the record holds variant alternative 0, "
                        "the module 1"));
}

TEST_F(ModuleTest, ModuleToStringShowsTheTreeWithoutInitializing) {
  const demo::Net net = demo::MakeNet();
  const std::string text = ModuleToString(net);
  EXPECT_THAT(text, HasSubstr("demo::Net(\n  (fc1): demo::Dense(\n"
                              "    (weight): Param[8, 4] 0 lazy\n"
                              "    (bias): Param[8] 0 lazy\n"
                              "    (in_features): 4\n"
                              "  )  # 40 params\n"));
  EXPECT_THAT(text, HasSubstr("(hidden): [\n    (0): demo::Dense(\n"));
  EXPECT_THAT(text, HasSubstr("(choice): demo::Identity(\n    (width): 3\n"));
  EXPECT_THAT(text, HasSubstr("(running_mean): Buffer[8] 0\n"));  // eager
  EXPECT_THAT(text, HasSubstr(")  # 206 params\n"));
  EXPECT_EQ(0, CountInitialized(net));
}

}  // namespace
}  // namespace kindling
