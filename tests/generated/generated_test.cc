// Compile-and-run tests over kindling-gen's output for models.h: every
// construct, paths, counts, laziness through metadata-only operations,
// printing, mapping and records.
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/module/module.h"
#include "kindling/nn/batch_norm.kindling.h"
#include "kindling/nn/layer_norm.kindling.h"
#include "kindling/nn/linear.kindling.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/memory_stats.h"
#include "tests/generated/models.kindling.h"

namespace acme::vision::models {
namespace {

using ::kindling::Device;
using ::kindling::Param;
using ::kindling::Tensor;
using ::kindling::nn::BatchNormConfig;
using ::kindling::nn::LayerNormConfig;
using ::kindling::nn::LinearConfig;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

static_assert(kindling::Module<Net>);
static_assert(kindling::Module<Mlp>);
static_assert(kindling::Module<Stack<kindling::nn::Linear, 2>>);
static_assert(!kindling::Module<HeadConfig>);
static_assert(std::is_same_v<kindling::RecordOf<Mlp>, MlpRecord>);
static_assert(std::is_same_v<kindling::RecordOf<Stack<kindling::nn::Linear, 2>>,
                             StackRecord<kindling::nn::Linear, 2>>);

Net MakeNet() {
  Kinds kinds{
      Param<Tensor<2>>::Uninitialized(kindling::ParamId::New(),
                                      [](const Device& device, bool) {
                                        return Tensor<2>::Ones({2, 2}, device);
                                      },
                                      Device::Cpu(), true, {2, 2}),
      Param<Tensor<1, kindling::Int>>::Initialized(
          kindling::ParamId::New(),
          Tensor<1, kindling::Int>::FromData<int64_t>({1, 2, 3}, {3})),
      Param<Tensor<3, kindling::Bool>>::Initialized(
          kindling::ParamId::New(),
          Tensor<3, kindling::Bool>::Zeros({1, 2, 2})),
      kindling::Buffer<Tensor<1>>(Tensor<1>::Zeros({1}))};
  return Net{
      .trunk = Mlp{.fc1 = LinearConfig{4, 8}.Init(),
                   .fc2 = LinearConfig{8, 3}.Init(),
                   .hidden = {LinearConfig{8, 8}.Init(),
                              LinearConfig{8, 8, /*bias=*/false}.Init()},
                   .norm = LayerNormConfig{8}.Init(),
                   .num_classes = 3,
                   .label = "trunk"},
      .pair = {.layers = {LinearConfig{3, 3}.Init(),
                          LinearConfig{3, 3}.Init()}},
      .head = Residual{LinearConfig{3, 3}.Init()},
      .bn = BatchNormConfig{3}.Init<2>(),
      .kinds = kinds,
      .config = {},
  };
}

std::vector<std::string> ParamPaths(const Net& net) {
  std::vector<std::string> paths;
  kindling::VisitParams(net, [&](std::string_view path, const auto&) {
    paths.emplace_back(path);
  });
  return paths;
}

// Lazy float params that have been initialized (the Int/Bool ones and the
// buffer in `kinds` start initialized).
int InitializedLazyParams(const Net& net) {
  int count = 0;
  kindling::VisitParams(net, [&](std::string_view path, const auto& param) {
    if (path.rfind("kinds.", 0) != 0 && param.is_initialized()) ++count;
  });
  return count;
}

TEST(GeneratedTest, VisitsEveryParamWithItsDottedPath) {
  EXPECT_THAT(
      ParamPaths(MakeNet()),
      ElementsAre(
          "trunk.fc1.weight", "trunk.fc1.bias", "trunk.fc2.weight",
          "trunk.fc2.bias", "trunk.hidden.0.weight", "trunk.hidden.0.bias",
          "trunk.hidden.1.weight", "trunk.norm.gamma", "trunk.norm.beta",
          "pair.layers.0.weight", "pair.layers.0.bias", "pair.layers.1.weight",
          "pair.layers.1.bias", "head.inner.weight", "head.inner.bias",
          "bn.gamma", "bn.beta", "kinds.floats", "kinds.ints", "kinds.mask"));
}

TEST(GeneratedTest, VisitsBuffers) {
  std::vector<std::string> paths;
  kindling::VisitBuffers(MakeNet(), [&](std::string_view path, const auto&) {
    paths.emplace_back(path);
  });
  EXPECT_THAT(paths,
              ElementsAre("bn.running_mean", "bn.running_var", "kinds.steps"));
}

TEST(GeneratedTest, NumParamsCountsLazyShapesWithoutInitializing) {
  const kindling::MemoryStats before = kindling::GetMemoryStats(Device::Cpu());
  const Net net = MakeNet();
  // trunk: 40 + 27 + 72 + 64 + 16; pair: 2 * 12; head: 12; bn: 6;
  // kinds: 4 + 3 + 4.
  EXPECT_EQ(219 + 24 + 12 + 6 + 11, kindling::NumParams(net));
  EXPECT_EQ(0, InitializedLazyParams(net));
  const kindling::MemoryStats after = kindling::GetMemoryStats(Device::Cpu());
  // Only `kinds`' eagerly built tensors were allocated.
  EXPECT_EQ(3, after.allocation_count - before.allocation_count);
}

TEST(GeneratedTest, MetadataOperationsKeepEverythingLazy) {
  const Net net = MakeNet();
  const Net moved = kindling::ToDevice(net, Device::Cpu());
  const Net frozen = kindling::NoGrad(net);
  const Net valid = kindling::Valid(net);
  EXPECT_THAT(kindling::Devices<Device>(net), ElementsAre(Device::Cpu()));
  (void)kindling::ModuleToString(net);
  for (const Net* model : {&net, &moved, &frozen, &valid}) {
    EXPECT_EQ(0, InitializedLazyParams(*model));
  }
  EXPECT_FALSE(frozen.trunk.fc1.weight.lazy_is_require_grad());
  EXPECT_FALSE(net.bn.running_mean.is_initialized());
}

TEST(GeneratedTest, ConstantsAreCopiedAndSkippedFieldsIgnored) {
  const Net net = MakeNet();
  const Net mapped = kindling::MapParams(
      net, [](std::string_view, const auto& param) { return param; });
  EXPECT_EQ(3, mapped.trunk.num_classes);
  EXPECT_EQ("trunk", mapped.trunk.label);  // a plain copy keeps it
  const std::string text = kindling::ModuleToString(net);
  EXPECT_THAT(text, HasSubstr("(num_classes): 3"));
  EXPECT_THAT(text, Not(HasSubstr("label")));
}

TEST(GeneratedTest, MapProducesTheMappedValues) {
  const Net net = MakeNet();
  const Net doubled =
      kindling::MapParams(net, [](std::string_view, const auto& param) {
        using Value = std::remove_cvref_t<decltype(*param)>;
        if constexpr (Value::kIsFloat) {
          return param.map([](Value value) { return value * 2.0; });
        } else {
          return param;
        }
      });
  EXPECT_EQ((Tensor<2>(*net.trunk.fc1.weight) * 2.0).to_data<float>(),
            doubled.trunk.fc1.weight->to_data<float>());
  EXPECT_EQ(net.trunk.fc1.weight.id(), doubled.trunk.fc1.weight.id());
}

TEST(GeneratedTest, RecordRoundTripLoadsValuesAndIdsWithoutInit) {
  const Net source = MakeNet();
  const NetRecord record = kindling::IntoRecord(source);
  Net target = MakeNet();
  ASSERT_TRUE(kindling::LoadRecord(target, record).ok());
  EXPECT_EQ(source.trunk.hidden[1].weight->to_data<float>(),
            target.trunk.hidden[1].weight->to_data<float>());
  EXPECT_EQ(source.pair.layers[0].weight.id(),
            target.pair.layers[0].weight.id());
  EXPECT_EQ(source.bn.running_var.id(), target.bn.running_var.id());
  EXPECT_NE(source.trunk.fc1.weight->to_data<float>(),
            MakeNet().trunk.fc1.weight->to_data<float>());
}

TEST(GeneratedTest, ForkOnTheSameDeviceSharesNoStorage) {
  const Net net = MakeNet();
  (void)kindling::IntoRecord(net);  // initializes every lazy param
  const Net forked = kindling::Fork(net, Device::Cpu());
  EXPECT_EQ(net.trunk.fc1.weight->to_data<float>(),
            forked.trunk.fc1.weight->to_data<float>());
  EXPECT_FALSE(
      forked.trunk.fc1.weight->shares_storage_with(*net.trunk.fc1.weight));
  EXPECT_FALSE(forked.bn.running_mean.value().shares_storage_with(
      net.bn.running_mean.value()));
  // An in-place update of the fork does not reach the original. Parameter
  // values are leaves that require grad: write them under a NoGradGuard.
  Tensor<2> worker_weight = *forked.trunk.fc1.weight;
  {
    kindling::NoGradGuard no_grad;
    worker_weight.fill_(0.0);
  }
  EXPECT_NE(0.0f, net.trunk.fc1.weight->to_data<float>()[0]);
}

TEST(GeneratedTest, PrintShowsTypesShapesAndCounts) {
  const std::string text = kindling::ModuleToString(MakeNet());
  EXPECT_THAT(text, HasSubstr("acme::vision::models::Net(\n"
                              "  (trunk): acme::vision::models::Mlp(\n"
                              "    (fc1): kindling::nn::Linear(\n"
                              "      (weight): Param[4, 8] cpu lazy\n"));
  // A template prints with its arguments.
  EXPECT_THAT(text, HasSubstr("(pair): acme::vision::models::Stack<"
                              "kindling::nn::Linear, 2>("));
  EXPECT_THAT(text, HasSubstr("(bn): kindling::nn::BatchNorm<2>("));
  EXPECT_THAT(text, HasSubstr("(head): acme::vision::models::Residual("));
  EXPECT_THAT(text, HasSubstr("(running_mean): Buffer[3] cpu lazy"));
}

}  // namespace
}  // namespace acme::vision::models
