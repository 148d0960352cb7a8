// Every module of the golden tests (testdata/*.h), compiled from the same
// generated code the goldens hold and exercised: the walks reach every
// parameter under the expected path, count it, and a record round trip
// restores every value and id. Comparing text alone once let a tuple's
// parameters go unsaved; this test is what catches that.
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/io/module_file.h"
#include "kindling/module/module.h"
#include "tests/codegen/testdata/choices.kindling.h"
#include "tests/codegen/testdata/constants.kindling.h"
#include "tests/codegen/testdata/containers.kindling.h"
#include "tests/codegen/testdata/keys.kindling.h"
#include "tests/codegen/testdata/leaves_and_buffers.kindling.h"
#include "tests/codegen/testdata/namespaces.kindling.h"
#include "tests/codegen/testdata/nested.kindling.h"
#include "tests/codegen/testdata/plain.kindling.h"
#include "tests/codegen/testdata/templates.kindling.h"

namespace demo {
namespace {

using ::kindling::Buffer;
using ::kindling::Param;
using ::kindling::ParamId;
using ::kindling::Shape;
using ::kindling::Tensor;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::MatchesRegex;

// Filler makes initialized leaves, each filled with the next value, so two
// modules built from fillers with different starts differ in every leaf.
class Filler {
 public:
  explicit Filler(float start) : next_(start) {}

  template <int D>
  Param<Tensor<D>> P(const Shape& shape) {
    return Param<Tensor<D>>::Initialized(ParamId::New(),
                                         Tensor<D>::Full(shape, next_++));
  }
  template <int D>
  Buffer<Tensor<D>> B(const Shape& shape) {
    return Buffer<Tensor<D>>(Tensor<D>::Full(shape, next_++));
  }

 private:
  float next_;
};

// Every leaf's path (Params and Buffers), in walk order.
template <class M>
std::vector<std::string> LeafPaths(const M& module) {
  std::vector<std::string> paths;
  kindling::ForEachLeaf(module, [&](std::string_view path, const auto&) {
    paths.emplace_back(path);
  });
  return paths;
}

// Every leaf's values and id, in walk order.
template <class M>
std::vector<std::pair<std::vector<float>, uint64_t>> Leaves(const M& module) {
  std::vector<std::pair<std::vector<float>, uint64_t>> leaves;
  kindling::ForEachLeaf(module, [&](std::string_view, const auto& leaf) {
    if constexpr (kindling::module_internal::ParamField<decltype(leaf)>) {
      leaves.emplace_back(leaf.val().template to_data<float>(),
                          leaf.id().value());
    } else {
      leaves.emplace_back(leaf.value().template to_data<float>(),
                          leaf.id().value());
    }
  });
  return leaves;
}

// Saves a module built by make(Filler(1)) and loads it into one built by
// make(Filler(1000)): afterwards every leaf has the saved value and id.
template <class Make>
void ExpectRecordRoundTrip(Make make) {
  Filler source_filler(1.0f);
  Filler target_filler(1000.0f);
  const auto source = make(source_filler);
  auto target = make(target_filler);
  if (!Leaves(source).empty()) {
    ASSERT_NE(Leaves(source), Leaves(target));
  }
  const kindling::RecordOf<std::remove_const_t<decltype(source)>> record =
      kindling::IntoRecord(source);
  const absl::Status status = kindling::LoadRecord(target, record);
  ASSERT_TRUE(status.ok()) << status;
  EXPECT_EQ(Leaves(source), Leaves(target));
}

// --- plain.h ---------------------------------------------------------------

Linear MakeLinear(Filler& filler, bool bias = true) {
  Linear linear{.weight = filler.P<2>({2, 3}), .bias = std::nullopt};
  if (bias) linear.bias = filler.P<1>({2});
  return linear;
}

TwoLayer MakeTwoLayer(Filler& filler) {
  return TwoLayer{.fc1 = MakeLinear(filler),
                  .fc2 = MakeLinear(filler, /*bias=*/false)};
}

TEST(PlainModules, WalksCountsAndRecords) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeTwoLayer(filler)),
              ElementsAre("fc1.weight", "fc1.bias", "fc2.weight"));
  EXPECT_EQ(14, kindling::NumParams(MakeTwoLayer(filler)));
  ExpectRecordRoundTrip([](Filler& f) { return MakeLinear(f); });
  ExpectRecordRoundTrip(MakeTwoLayer);
}

// --- containers.h ----------------------------------------------------------

Dense MakeDense(Filler& filler) { return Dense{.weight = filler.P<2>({2, 2})}; }
Conv MakeConv(Filler& filler) {
  return Conv{.kernel = filler.P<4>({1, 1, 2, 2})};
}

Stack MakeStack(Filler& filler) {
  return Stack{
      .layers = {MakeDense(filler), MakeDense(filler)},
      .heads = {MakeDense(filler), MakeDense(filler), MakeDense(filler)},
      .projection = MakeDense(filler),
      .stem = MakeConv(filler),
      .maybe_convs = {std::nullopt, MakeConv(filler)},
      .scales = {filler.P<1>({3}), filler.P<1>({3})},
      .layer_sizes = {4, 5},
  };
}

TEST(ContainerModules, WalksCountsAndRecords) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeStack(filler)),
              ElementsAre("layers.0.weight", "layers.1.weight",
                          "heads.0.weight", "heads.1.weight", "heads.2.weight",
                          "projection.weight", "stem.kernel",
                          "maybe_convs.1.kernel", "scales.0", "scales.1"));
  EXPECT_EQ(6 * 4 + 4 + 4 + 6, kindling::NumParams(MakeStack(filler)));
  ExpectRecordRoundTrip(MakeDense);
  ExpectRecordRoundTrip(MakeConv);
  ExpectRecordRoundTrip(MakeStack);
}

// --- constants.h -----------------------------------------------------------

Classifier MakeClassifier(Filler& filler) {
  return Classifier{.weight = filler.P<2>({3, 2}),
                    .num_classes = 3,
                    .temperature = 0.5f,
                    .activation = Activation::kGelu,
                    .name = "classifier",
                    .dropout = {},
                    .hidden_sizes = {8},
                    .label_ids = {{"cat", 0}},
                    .description = "a classifier",
                    .debug_label = "skipped",
                    .cache = nullptr};
}

TEST(ConstantModules, ConstantsAreKeptButNotSaved) {
  Filler filler(1.0f);
  const Classifier classifier = MakeClassifier(filler);
  EXPECT_THAT(LeafPaths(classifier), ElementsAre("weight"));
  EXPECT_EQ(6, kindling::NumParams(classifier));
  EXPECT_THAT(kindling::ModuleToString(classifier),
              HasSubstr("(num_classes): 3\n"));
  ExpectRecordRoundTrip(MakeClassifier);

  const Identity identity{.features = 4};
  EXPECT_THAT(LeafPaths(identity), IsEmpty());
  EXPECT_EQ(0, kindling::NumParams(identity));
  ExpectRecordRoundTrip([](Filler&) { return Identity{.features = 4}; });
}

// --- leaves_and_buffers.h --------------------------------------------------

BatchNorm MakeBatchNorm(Filler& filler) {
  return BatchNorm{.gamma = filler.P<1>({4}),
                   .beta = filler.P<1>({4}),
                   .running_mean = filler.B<1>({4}),
                   .running_var = filler.B<1>({4}),
                   .momentum = 0.1,
                   .epsilon = 1e-5};
}

TEST(BufferModules, BuffersAreWalkedAndSavedButNotCounted) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeBatchNorm(filler)),
              ElementsAre("gamma", "beta", "running_mean", "running_var"));
  EXPECT_EQ(8, kindling::NumParams(MakeBatchNorm(filler)));
  ExpectRecordRoundTrip(MakeBatchNorm);
}

// --- namespaces.h ----------------------------------------------------------

outer::inner::Embedding MakeEmbedding(Filler& filler) {
  return outer::inner::Embedding{.table = filler.P<2>({5, 2})};
}

Seq2Seq MakeSeq2Seq(Filler& filler) {
  return Seq2Seq{.encoder = {.embedding = MakeEmbedding(filler)},
                 .decoder = {.embedding = MakeEmbedding(filler)}};
}

TEST(NamespacedModules, WalksCountsAndRecords) {
  Filler filler(1.0f);
  EXPECT_THAT(
      LeafPaths(MakeSeq2Seq(filler)),
      ElementsAre("encoder.embedding.table", "decoder.embedding.table"));
  EXPECT_EQ(20, kindling::NumParams(MakeSeq2Seq(filler)));
  EXPECT_STREQ("outer::Decoder",
               kindling::ModuleTraits<outer::Decoder>::kTypeName);
  ExpectRecordRoundTrip(MakeEmbedding);
  ExpectRecordRoundTrip([](Filler& f) {
    return outer::inner::Encoder{.embedding = MakeEmbedding(f)};
  });
  ExpectRecordRoundTrip(
      [](Filler& f) { return outer::Decoder{.embedding = MakeEmbedding(f)}; });
  ExpectRecordRoundTrip(MakeSeq2Seq);
}

// --- templates.h -----------------------------------------------------------

// N params of `shape` (Param has no default constructor to fill in later).
template <int D, size_t N>
std::array<Param<Tensor<D>>, N> Params(Filler& filler, const Shape& shape) {
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return std::array<Param<Tensor<D>>, N>{((void)I, filler.P<D>(shape))...};
  }
  (std::make_index_sequence<N>());
}

template <int N>
Block<Tensor<2>, N> MakeBlock(Filler& filler) {
  return Block<Tensor<2>, N>{.weight = filler.P<2>({2, 2}),
                             .taps = Params<2, N>(filler, {1, 2}),
                             .extra = Tensor<2>::Zeros({1, 1}),
                             .more = {Tensor<2>::Zeros({1, 1})},
                             .repeats = 2};
}

Bank<float, 1, 2> MakeBank(Filler& filler) {
  return Bank<float, 1, 2>{.tensors = {filler.P<1>({3}), filler.P<2>({2, 2})},
                           .scale = 0.5f};
}

Chain<std::vector, Tensor<1>> MakeChain(Filler& filler) {
  return Chain<std::vector, Tensor<1>>{
      .links = {filler.P<1>({2}), filler.P<1>({2}), filler.P<1>({2})}};
}

TEST(TemplateModules, WalksCountsAndRecords) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeBlock<2>(filler)),
              ElementsAre("weight", "taps.0", "taps.1"));
  // The tuple's parameters: visited, counted and saved.
  EXPECT_THAT(LeafPaths(MakeBank(filler)),
              ElementsAre("tensors.0", "tensors.1"));
  EXPECT_EQ(7, kindling::NumParams(MakeBank(filler)));
  EXPECT_THAT(LeafPaths(MakeChain(filler)),
              ElementsAre("links.0", "links.1", "links.2"));
  const auto uses_block = [](Filler& f) {
    Block<Tensor<2>, 4> block = MakeBlock<4>(f);
    std::vector<Block<Tensor<1>, 2>> blocks;
    blocks.push_back({.weight = f.P<1>({2}),
                      .taps = Params<1, 2>(f, {2}),
                      .extra = Tensor<1>::Zeros({1}),
                      .more = {},
                      .repeats = 1});
    return UsesBlock{.block = std::move(block), .blocks = std::move(blocks)};
  };
  EXPECT_THAT(LeafPaths(uses_block(filler)),
              ElementsAre("block.weight", "block.taps.0", "block.taps.1",
                          "block.taps.2", "block.taps.3", "blocks.0.weight",
                          "blocks.0.taps.0", "blocks.0.taps.1"));
  ExpectRecordRoundTrip(MakeBlock<3>);
  ExpectRecordRoundTrip(MakeBank);
  ExpectRecordRoundTrip(MakeChain);
  ExpectRecordRoundTrip(uses_block);
}

// A module template's kTypeName carries its arguments as instantiated: a
// module argument by its own kTypeName, an integer by value, any other type
// or template as the compiler names it.
TEST(TemplateModules, TypeNamesCarryTheirArguments) {
  // GCC may spell Tensor<2> with its default Kind argument.
  EXPECT_THAT(
      (kindling::ModuleTraits<Block<Tensor<2>, 4>>::kTypeName),
      MatchesRegex(
          R"(demo::Block<kindling::Tensor<2(, kindling::Float)?>, 4>)"));
  EXPECT_EQ("demo::Bank<float, 1, 2>",
            (kindling::ModuleTraits<Bank<float, 1, 2>>::kTypeName));
  EXPECT_THAT(
      (kindling::ModuleTraits<Chain<std::vector, Tensor<1>>>::kTypeName),
      MatchesRegex(
          R"(demo::Chain<std::vector, kindling::Tensor<1(, kindling::Float)?>>)"));
  EXPECT_EQ("demo::Mixture<demo::Gate, demo::Expert>",
            (kindling::ModuleTraits<Mixture<Gate, Expert>>::kTypeName));
  EXPECT_EQ("demo::Mixture<>", kindling::ModuleTraits<Mixture<>>::kTypeName);
  // A checkpoint names the instantiation it was saved from.
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/bank.safetensors";
  Filler filler(1.0f);
  ASSERT_TRUE(kindling::SaveModule(MakeBank(filler), path).ok());
  Bank<float, 1, 2> loaded = MakeBank(filler);
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(loaded, path);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ("demo::Bank<float, 1, 2>", report->file_module_type);
}

// --- keys.h ----------------------------------------------------------------

HfOutput MakeHfOutput(Filler& filler) {
  return HfOutput{
      .projection = filler.P<2>({2, 2}),
      .layer_norm = {.weight = filler.P<1>({2}), .bias = filler.P<1>({2})},
      .dropout = 0.1};
}

// KINDLING_KEY names a field in paths, records, checkpoints and printing;
// the C++ field keeps its own name.
TEST(KeyedModules, FieldsTakeTheirKeys) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeHfOutput(filler)),
              ElementsAre("dense", "LayerNorm.weight", "LayerNorm.bias"));
  ExpectRecordRoundTrip(MakeHfOutput);
  const std::string text = kindling::ModuleToString(MakeHfOutput(filler));
  EXPECT_THAT(text, HasSubstr("(LayerNorm): demo::HfLayerNorm("));
  EXPECT_THAT(text, HasSubstr("(dropout_prob): 0.1"));
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/hf_output.safetensors";
  ASSERT_TRUE(kindling::SaveModule(MakeHfOutput(filler), path).ok());
  HfOutput loaded = MakeHfOutput(filler);
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(loaded, path);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_THAT(report->applied,
              ElementsAre("dense", "LayerNorm.weight", "LayerNorm.bias"));
}

// --- nested.h --------------------------------------------------------------

Transformer::Block MakeTransformerBlock(Filler& filler) {
  return Transformer::Block{.attention = filler.P<2>({2, 2}),
                            .norm = filler.P<1>({2})};
}

Transformer MakeTransformer(Filler& filler) {
  return Transformer{
      .embedding = filler.P<2>({4, 2}),
      .blocks = {MakeTransformerBlock(filler), MakeTransformerBlock(filler)}};
}

UsesNested MakeUsesNested(Filler& filler) {
  return UsesNested{.tower = {.heads = {Zoo::Head{.bias = filler.P<1>({2})},
                                        Zoo::Head{.bias = filler.P<1>({2})}}},
                    .cell = {.gate = filler.P<1>({3})},
                    .block = MakeTransformerBlock(filler)};
}

TEST(NestedModules, RecordsAreNamedAfterTheEnclosingClasses) {
  static_assert(std::is_same_v<kindling::RecordOf<Transformer::Block>,
                               Transformer_BlockRecord>);
  static_assert(
      std::is_same_v<kindling::RecordOf<Zoo::Tower<2>>, Zoo_TowerRecord<2>>);
  static_assert(std::is_same_v<kindling::RecordOf<Zoo::Inner::Cell>,
                               Zoo_Inner_CellRecord>);
  static_assert(!kindling::Module<Zoo>);
  EXPECT_STREQ("demo::Zoo::Inner::Cell",
               kindling::ModuleTraits<Zoo::Inner::Cell>::kTypeName);
}

TEST(NestedModules, WalksCountsAndRecords) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeTransformer(filler)),
              ElementsAre("embedding", "blocks.0.attention", "blocks.0.norm",
                          "blocks.1.attention", "blocks.1.norm"));
  EXPECT_EQ(20, kindling::NumParams(MakeTransformer(filler)));
  EXPECT_THAT(LeafPaths(MakeUsesNested(filler)),
              ElementsAre("tower.heads.0.bias", "tower.heads.1.bias",
                          "cell.gate", "block.attention", "block.norm"));
  ExpectRecordRoundTrip(MakeTransformerBlock);
  ExpectRecordRoundTrip(MakeTransformer);
  ExpectRecordRoundTrip(
      [](Filler& f) { return Zoo::Head{.bias = f.P<1>({2})}; });
  ExpectRecordRoundTrip([](Filler& f) {
    return Zoo::Tower<1>{.heads = {Zoo::Head{.bias = f.P<1>({2})}}};
  });
  ExpectRecordRoundTrip(
      [](Filler& f) { return Zoo::Inner::Cell{.gate = f.P<1>({3})}; });
  ExpectRecordRoundTrip(MakeUsesNested);
}

// --- choices.h -------------------------------------------------------------

Gate MakeGate(Filler& filler) { return Gate{.weight = filler.P<1>({2})}; }
Expert MakeExpert(Filler& filler) {
  return Expert{.up = filler.P<2>({2, 4}), .down = filler.P<2>({4, 2})};
}

Router MakeRouter(Filler& filler) {
  return Router{
      .route = std::monostate(),
      .parts = {MakeGate(filler), filler.P<1>({3}), 7},
      .pair = {filler.P<2>({2, 2}), {MakeGate(filler)}},
      .spare = std::tuple<Expert>(MakeExpert(filler)),
      .setting = int64_t{3},
  };
}

Mixture<Gate, Expert> MakeMixture(Filler& filler) {
  return Mixture<Gate, Expert>{
      .experts = {MakeGate(filler), MakeExpert(filler)},
      .active = MakeExpert(filler)};
}

TEST(ChoiceModules, TuplesAndPairsAreWalkedElementByElement) {
  Filler filler(1.0f);
  EXPECT_THAT(LeafPaths(MakeRouter(filler)),
              ElementsAre("parts.0.weight", "parts.1", "pair.0",
                          "pair.1.0.weight", "spare.0.up", "spare.0.down"));
  EXPECT_EQ(2 + 3 + 4 + 2 + 16, kindling::NumParams(MakeRouter(filler)));
  EXPECT_THAT(LeafPaths(MakeMixture(filler)),
              ElementsAre("experts.0.weight", "experts.1.up", "experts.1.down",
                          "active.up", "active.down"));
  ExpectRecordRoundTrip(MakeGate);
  ExpectRecordRoundTrip(MakeExpert);
  ExpectRecordRoundTrip(MakeRouter);
  ExpectRecordRoundTrip(MakeMixture);
}

TEST(ChoiceModules, MonostateAlternativeHoldsNothingAndLoadsOnlyIntoItself) {
  Filler filler(1.0f);
  Router with_gate = MakeRouter(filler);
  with_gate.route = MakeGate(filler);
  EXPECT_EQ("route.weight", LeafPaths(with_gate).front());
  EXPECT_THAT(kindling::ModuleToString(MakeRouter(filler)),
              HasSubstr("(route): std::monostate\n"));

  Router empty = MakeRouter(filler);
  const absl::Status status =
      kindling::LoadRecord(empty, kindling::IntoRecord(with_gate));
  EXPECT_EQ(absl::StatusCode::kInvalidArgument, status.code());
  EXPECT_THAT(status.message(),
              HasSubstr("route: the record holds variant alternative 1, the "
                        "module 0"));
  EXPECT_EQ(0u, empty.route.index());
}

}  // namespace
}  // namespace demo
