#include "kindling/module/erased.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kindling/module/module.h"
#include "kindling/tensor/tensor.h"

namespace demo {

// A module over real tensors, with hand-written traits.
struct Mixed {
  kindling::Param<kindling::Tensor<2>> weight;
  kindling::Param<kindling::Tensor<1, kindling::Int>> counts;
};
struct MixedRecord;

}  // namespace demo

namespace kindling {

template <>
struct ModuleTraits<::demo::Mixed> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Mixed";
  using Record = ::demo::MixedRecord;
  template <class Self, class Fn>
  static void ForEachField(Self& module, Fn&& fn) {
    fn("weight", module.weight);
    fn("counts", module.counts);
  }
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
                                     Fn&& fn) {
    fn("weight", module.weight, record.weight);
    fn("counts", module.counts, record.counts);
  }
  template <class Fn>
  static void ForEachConstant(const ::demo::Mixed&, Fn&&) {}
};

}  // namespace kindling

namespace demo {
struct MixedRecord {
  kindling::RecordOf<kindling::Param<kindling::Tensor<2>>> weight;
  kindling::RecordOf<kindling::Param<kindling::Tensor<1, kindling::Int>>>
      counts;
};
}  // namespace demo

namespace kindling {
namespace {

using ::testing::ElementsAre;

demo::Mixed MakeMixed() {
  return demo::Mixed{
      Param<Tensor<2>>::Uninitialized(
          ParamId::New(),
          [](const Device& device, bool) {
            return Tensor<2>::Ones({2, 3}, device);
          },
          Device::Cpu(), true, Shape{2, 3}),
      Param<Tensor<1, Int>>::Initialized(
          ParamId::New(), Tensor<1, Int>::FromData<int64_t>({1, 2}, {2}))};
}

TEST(ErasedTest, VisitSeesPathsShapesAndRanksWithoutInitializing) {
  const demo::Mixed model = MakeMixed();
  std::vector<std::string> seen;
  VisitParamsErased(model, [&](const ParamView& param) {
    seen.push_back(std::string(param.path()) + " rank " +
                   std::to_string(param.rank()) + " " +
                   param.lazy_shape().ToString() + " " +
                   param.lazy_device().ToString() +
                   (param.is_initialized() ? "" : " lazy"));
  });
  EXPECT_THAT(seen, ElementsAre("weight rank 2 [2, 3] cpu lazy",
                                "counts rank 1 [2] cpu"));
  EXPECT_FALSE(model.weight.is_initialized());
}

TEST(ErasedTest, ValueInitializesAndReturnsTheTensor) {
  const demo::Mixed model = MakeMixed();
  VisitParamsErased(model, [&](const ParamView& param) {
    if (param.path() == "weight") {
      EXPECT_EQ((Shape{2, 3}), param.value().shape());
    }
  });
  EXPECT_TRUE(model.weight.is_initialized());
}

TEST(ErasedTest, MapReplacesChosenParamsKeepingIdsAndLeavesOthersLazy) {
  const demo::Mixed model = MakeMixed();
  const demo::Mixed mapped = MapParamsErased(
      model, [](const ParamView& param) -> std::optional<TensorBase> {
        if (param.path() != "counts") return std::nullopt;
        return Tensor<1, Int>::FromData<int64_t>({7, 8}, {2}).base();
      });
  EXPECT_EQ(model.counts.id(), mapped.counts.id());
  EXPECT_EQ((std::vector<int64_t>{7, 8}), mapped.counts->to_data<int64_t>());
  EXPECT_EQ((std::vector<int64_t>{1, 2}), model.counts->to_data<int64_t>());
  EXPECT_FALSE(mapped.weight.is_initialized());
}

TEST(ErasedDeathTest, MapWithTheWrongRankAborts) {
  const demo::Mixed model = MakeMixed();
  EXPECT_DEATH(
      (void)MapParamsErased(model,
                            [](const ParamView&) -> std::optional<TensorBase> {
                              return Tensor<1>::Ones({3}).base();
                            }),
      "weight is rank 2, the callback returned rank 1");
}

}  // namespace
}  // namespace kindling
