// Param<T>'s laziness contract, over a parameter type that counts its storage
// allocations and init calls. The first seven tests follow the test plan of
// Burn PR #4703 (lazy clone), adapted to Kindling's shared-state copies.
#include "kindling/core/param.h"

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "tests/core/counting_parameter.h"

namespace kindling {
namespace {

using ::kindling::testing::Counters;
using ::kindling::testing::CountingParam;
using ::kindling::testing::CountingParameter;
using ::kindling::testing::LazyCountingParam;

class ParamTest : public ::testing::Test {
 protected:
  void SetUp() override { Counters::Reset(); }

  static int64_t allocations() {
    return Counters::storage_allocations().load();
  }
  static int64_t init_calls() { return Counters::init_calls().load(); }
};

CountingParam InitializedParam(float fill) {
  return CountingParam::Initialized(ParamId::New(),
                                    CountingParameter({2, 3}, fill, 0, true));
}

// --- Burn #4703 test plan, adapted -----------------------------------------

TEST_F(ParamTest, CopyingLazyParamDoesNotInitialize) {
  CountingParam original = LazyCountingParam({4, 5});
  CountingParam copy = original;
  EXPECT_FALSE(original.is_initialized());
  EXPECT_FALSE(copy.is_initialized());
  EXPECT_EQ(0, init_calls());
  EXPECT_EQ(0, allocations());
}

TEST_F(ParamTest, CopyingInitializedParamSharesTheValue) {
  CountingParam original = InitializedParam(3.0f);
  const int64_t before = allocations();
  CountingParam copy = original;
  EXPECT_EQ(before, allocations());
  EXPECT_EQ(original.val().storage_address(), copy.val().storage_address());
  EXPECT_EQ(original.val().data(), copy.val().data());
  EXPECT_EQ(original.id(), copy.id());
}

TEST_F(ParamTest, LazyCopyProducesValidValueWithTheLazyShape) {
  CountingParam copy = LazyCountingParam({4, 5}, /*device=*/3);
  CountingParam second = copy;
  const CountingParameter& value = second.val();
  EXPECT_EQ((std::vector<int64_t>{4, 5}), value.shape());
  EXPECT_EQ(20u, value.data().size());
  EXPECT_EQ(3, value.device());
}

TEST_F(ParamTest, LazyCopiesShareOneValueAndOneInitRun) {
  // Burn's seed asserted the opposite (independent values per clone); that
  // left clones of one module with different weights (Burn #5040, #5384).
  CountingParam original = LazyCountingParam({2, 2});
  CountingParam copy = original;
  const CountingParameter& from_copy = copy.val();
  EXPECT_TRUE(original.is_initialized());
  EXPECT_EQ(from_copy.data(), original.val().data());
  EXPECT_EQ(from_copy.storage_address(), original.val().storage_address());
  EXPECT_EQ(1, init_calls());
  EXPECT_EQ(1, allocations());
}

TEST_F(ParamTest, DerefOnLazyCopyInitializesOnceForAllCopies) {
  CountingParam original = LazyCountingParam({3});
  CountingParam copy = original;
  EXPECT_EQ(3u, copy->data().size());
  EXPECT_EQ(copy->data(), (*original).data());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, InitMapperOnLazyCopyDoesNotAffectTheOriginal) {
  CountingParam original = LazyCountingParam({2});
  CountingParam copy = original;
  CountingParam doubled =
      copy.init_mapper([](CountingParameter p) { return p.Scaled(2.0f); });
  EXPECT_FALSE(doubled.is_initialized());
  EXPECT_FALSE(original.is_initialized());
  EXPECT_EQ(0, init_calls());

  const float base = original.val().data()[0];
  EXPECT_EQ(2.0f * base, doubled.val().data()[0]);
  EXPECT_EQ(base, copy.val().data()[0]);
  EXPECT_EQ(base, original.val().data()[0]);
  // One init run feeds the original and the derived param.
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, LoadingIntoLazyParamDoesNotInitialize) {
  CountingParam source = InitializedParam(9.0f);
  CountingParam fresh = LazyCountingParam({2, 3});
  CountingParam copy_of_fresh = fresh;

  CountingParam loaded = fresh.load(source.val());
  EXPECT_EQ(0, init_calls());
  EXPECT_EQ(source.val().data(), loaded.val().data());
  EXPECT_EQ(fresh.id(), loaded.id());
  // The other copies keep their own (still lazy) state.
  EXPECT_FALSE(fresh.is_initialized());
  EXPECT_FALSE(copy_of_fresh.is_initialized());
}

// --- The rest of the contract ----------------------------------------------

TEST_F(ParamTest, UninitializedReportsLazyMetadataWithoutInitializing) {
  CountingParam param = LazyCountingParam({7, 8}, /*device=*/2,
                                          /*require_grad=*/false);
  EXPECT_EQ((std::vector<int64_t>{7, 8}), param.lazy_shape());
  EXPECT_EQ(2, param.lazy_device());
  EXPECT_FALSE(param.lazy_is_require_grad());
  EXPECT_FALSE(param.is_initialized());
  EXPECT_EQ(0, init_calls());
}

TEST_F(ParamTest, InitializedReportsMetadataOfItsValue) {
  CountingParam param = CountingParam::Initialized(
      ParamId::New(), CountingParameter({5}, 0.0f, /*device=*/4, false));
  EXPECT_TRUE(param.is_initialized());
  EXPECT_EQ(std::vector<int64_t>{5}, param.lazy_shape());
  EXPECT_EQ(4, param.lazy_device());
  EXPECT_FALSE(param.lazy_is_require_grad());
}

TEST_F(ParamTest, InitFunctionReceivesDeviceAndRequireGrad) {
  CountingParam param = LazyCountingParam({1}, /*device=*/5,
                                          /*require_grad=*/false);
  EXPECT_EQ(5, param->device());
  EXPECT_FALSE(param->is_require_grad());
}

TEST_F(ParamTest, ValInitializesOnceAcrossRepeatedReads) {
  CountingParam param = LazyCountingParam({2});
  const CountingParameter* first = &param.val();
  for (int i = 0; i < 10; ++i) EXPECT_EQ(first, &param.val());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, CopyOfLazyParamAllocatesNothing) {
  CountingParam original = LazyCountingParam({1024, 1024});
  std::vector<CountingParam> copies(100, original);
  EXPECT_EQ(0, allocations());
  EXPECT_EQ(0, init_calls());
  for (const CountingParam& copy : copies) {
    EXPECT_TRUE(copy.shares_state_with(original));
  }
}

TEST_F(ParamTest, SetRequireGradOnLazyParamStaysLazy) {
  CountingParam original = LazyCountingParam({2}, 0, /*require_grad=*/true);
  CountingParam frozen = original.set_require_grad(false);
  EXPECT_FALSE(frozen.is_initialized());
  EXPECT_FALSE(frozen.lazy_is_require_grad());
  EXPECT_TRUE(original.lazy_is_require_grad());
  EXPECT_EQ(0, init_calls());
  EXPECT_EQ(original.id(), frozen.id());

  EXPECT_FALSE(frozen->is_require_grad());
  EXPECT_TRUE(original->is_require_grad());
  // Tied weights stay tied: same storage, one init run.
  EXPECT_EQ(original->storage_address(), frozen->storage_address());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, SetRequireGradOnInitializedParamMapsTheValue) {
  CountingParam param = InitializedParam(1.0f);
  CountingParam frozen = param.set_require_grad(false);
  EXPECT_TRUE(frozen.is_initialized());
  EXPECT_FALSE(frozen->is_require_grad());
  EXPECT_TRUE(param->is_require_grad());
}

TEST_F(ParamTest, InitMapperOnInitializedParamMapsImmediately) {
  CountingParam param = InitializedParam(2.0f);
  CountingParam tripled =
      param.init_mapper([](CountingParameter p) { return p.Scaled(3.0f); });
  EXPECT_TRUE(tripled.is_initialized());
  EXPECT_EQ(6.0f, tripled->data()[0]);
  EXPECT_EQ(2.0f, param->data()[0]);
}

TEST_F(ParamTest, InitMapperChainsApplyInOrder) {
  CountingParam param = LazyCountingParam({1});
  CountingParam chained =
      param.init_mapper([](CountingParameter p) { return p.Scaled(2.0f); })
          .init_mapper([](CountingParameter p) { return p.Scaled(5.0f); });
  EXPECT_FALSE(chained.is_initialized());
  EXPECT_EQ(10.0f * param->data()[0], chained->data()[0]);
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, InitMapperAfterOriginalWasReadMapsItsValue) {
  CountingParam original = LazyCountingParam({1});
  CountingParam copy = original;
  const float base = original->data()[0];
  CountingParam scaled =
      copy.init_mapper([](CountingParameter p) { return p.Scaled(4.0f); });
  EXPECT_TRUE(scaled.is_initialized());
  EXPECT_EQ(4.0f * base, scaled->data()[0]);
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, MapKeepsIdAndMappers) {
  CountingParam param =
      InitializedParam(1.0f)
          .load_mapper([](CountingParameter p) { return p.Scaled(10.0f); })
          .save_mapper([](CountingParameter p) { return p.Scaled(0.5f); });
  CountingParam mapped =
      param.map([](CountingParameter p) { return p.Scaled(3.0f); });
  EXPECT_EQ(param.id(), mapped.id());
  EXPECT_EQ(3.0f, mapped->data()[0]);
  EXPECT_TRUE(mapped.mapper().has_load());
  EXPECT_TRUE(mapped.mapper().has_save());
  EXPECT_EQ(1.5f, mapped.value_for_save().data()[0]);
}

TEST_F(ParamTest,
       MapOnLazyParamInitializesItAndLeavesCopiesSharingTheOriginal) {
  CountingParam original = LazyCountingParam({1});
  CountingParam copy = original;
  CountingParam mapped =
      copy.map([](CountingParameter p) { return p.Scaled(2.0f); });
  EXPECT_FALSE(mapped.shares_state_with(original));
  EXPECT_TRUE(copy.shares_state_with(original));
  EXPECT_EQ(2.0f * original->data()[0], mapped->data()[0]);
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, ConsumeReturnsIdValueAndMapper) {
  CountingParam param = LazyCountingParam({3}).save_mapper(
      [](CountingParameter p) { return p.Scaled(2.0f); });
  const ParamId id = param.id();
  auto [consumed_id, value, mapper] = std::move(param).consume();
  EXPECT_EQ(id, consumed_id);
  EXPECT_EQ(3u, value.data().size());
  EXPECT_TRUE(mapper.has_save());
  EXPECT_FALSE(mapper.has_load());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, IntoValueReturnsTheValue) {
  CountingParam param = InitializedParam(4.0f);
  EXPECT_EQ(4.0f, std::move(param).into_value().data()[0]);
}

TEST_F(ParamTest, LoadAppliesLoadMapperAndLazyRequireGrad) {
  CountingParam target =
      LazyCountingParam({2, 3}, 0, /*require_grad=*/false)
          .load_mapper([](CountingParameter p) { return p.Scaled(10.0f); });
  CountingParameter stored({2, 3}, 1.5f, 0, /*require_grad=*/true);
  CountingParam loaded = target.load(stored);
  EXPECT_EQ(15.0f, loaded->data()[0]);
  EXPECT_FALSE(loaded->is_require_grad());
  EXPECT_TRUE(loaded.mapper().has_load());
  EXPECT_EQ(0, init_calls());
}

TEST_F(ParamTest, WithValueReplacesTheValueWithoutInitOrLoadMapper) {
  CountingParam param = LazyCountingParam({2}).load_mapper(
      [](CountingParameter p) { return p.Scaled(10.0f); });
  CountingParam replaced =
      param.with_value(CountingParameter({2}, 3.0f, 0, true));
  EXPECT_EQ(3.0f, replaced->data()[0]);  // no load mapper
  EXPECT_TRUE(replaced.mapper().has_load());
  EXPECT_EQ(param.id(), replaced.id());
  EXPECT_FALSE(param.is_initialized());
  EXPECT_EQ(0, init_calls());
}

TEST_F(ParamTest, SaveMapperIsAppliedToValueForSave) {
  CountingParam param = InitializedParam(8.0f).save_mapper(
      [](CountingParameter p) { return p.Scaled(0.25f); });
  EXPECT_EQ(2.0f, param.value_for_save().data()[0]);
  EXPECT_EQ(8.0f, param->data()[0]);  // the live value is untouched
}

TEST_F(ParamTest, SettingMappersKeepsLazinessAndSharedState) {
  CountingParam param = LazyCountingParam({2});
  CountingParam with_mapper =
      param.load_mapper([](CountingParameter p) { return p; });
  EXPECT_TRUE(with_mapper.shares_state_with(param));
  EXPECT_FALSE(with_mapper.is_initialized());
  EXPECT_FALSE(param.mapper().has_load());
  EXPECT_EQ(0, init_calls());
}

TEST_F(ParamTest, SettingAMapperReplacesThePreviousOne) {
  CountingParam param =
      InitializedParam(1.0f)
          .save_mapper([](CountingParameter p) { return p.Scaled(2.0f); })
          .save_mapper([](CountingParameter p) { return p.Scaled(3.0f); });
  EXPECT_EQ(3.0f, param.value_for_save().data()[0]);
}

TEST_F(ParamTest, WithIdSharesStateUnderANewId) {
  CountingParam param = LazyCountingParam({1});
  const ParamId other = ParamId::New();
  CountingParam renamed = param.with_id(other);
  EXPECT_EQ(other, renamed.id());
  EXPECT_TRUE(renamed.shares_state_with(param));
}

TEST_F(ParamTest, DerivedParamFreesTheOriginalValueWhenNothingElseHoldsIt) {
  const int64_t live_before = Counters::live_storages().load();
  CountingParam derived = LazyCountingParam({4}).init_mapper(
      [](CountingParameter p) { return p.Scaled(2.0f); });
  (void)derived.val();
  EXPECT_EQ(2, allocations());  // the original value, then its scaled copy
  // Only the scaled value is still alive: no second copy of the weights.
  EXPECT_EQ(live_before + 1, Counters::live_storages().load());
}

TEST_F(ParamTest, ToDeviceRetargetsALazyParamWithoutInitializing) {
  CountingParam param = LazyCountingParam({2, 2}, /*device=*/0);
  CountingParam moved = param.to_device(7);
  EXPECT_FALSE(moved.is_initialized());
  EXPECT_EQ(7, moved.lazy_device());
  EXPECT_EQ(0, param.lazy_device());
  EXPECT_EQ(0, init_calls());
  EXPECT_EQ(7, moved->device());  // the init function ran on device 7
  EXPECT_EQ(1, allocations());    // and nothing was allocated on device 0
  EXPECT_EQ(param.id(), moved.id());
}

TEST_F(ParamTest, ToDeviceMovesAnInitializedValue) {
  CountingParam param = InitializedParam(5.0f);
  CountingParam moved = param.to_device(3);
  EXPECT_EQ(3, moved->device());
  EXPECT_EQ(5.0f, moved->data()[0]);
  EXPECT_EQ(0, param->device());
}

TEST_F(ParamTest, ToDeviceOfADerivedLazyParamStaysLazy) {
  CountingParam doubled = LazyCountingParam({1}, 0).init_mapper(
      [](CountingParameter p) { return p.Scaled(2.0f); });
  CountingParam moved = doubled.to_device(4);
  EXPECT_FALSE(moved.is_initialized());
  EXPECT_EQ(4, moved->device());
  EXPECT_EQ(1, init_calls());
  EXPECT_EQ(2, allocations());  // init on device 4, then its scaled copy
}

TEST_F(ParamTest, MemoKeepsTiedCopiesTiedThroughToDevice) {
  CountingParam encoder_embed = LazyCountingParam({3}, 0);
  CountingParam decoder_embed = encoder_embed;  // tied weights
  StateMemo memo;
  CountingParam encoder_moved = encoder_embed.to_device(1, &memo);
  CountingParam decoder_moved = decoder_embed.to_device(1, &memo);
  EXPECT_TRUE(encoder_moved.shares_state_with(decoder_moved));
  EXPECT_EQ(encoder_moved->storage_address(), decoder_moved->storage_address());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, MemoKeepsDerivedParamsTiedToTheirSourceThroughToDevice) {
  // decoder.embed = encoder.embed.set_require_grad(false), then a model-wide
  // move: the frozen copy must still be derived from the moved source.
  CountingParam encoder_embed = LazyCountingParam({3}, 0);
  CountingParam decoder_embed = encoder_embed.set_require_grad(false);
  StateMemo memo;
  CountingParam encoder_moved = encoder_embed.to_device(1, &memo);
  CountingParam decoder_moved = decoder_embed.to_device(1, &memo);
  EXPECT_EQ(encoder_moved->storage_address(), decoder_moved->storage_address());
  EXPECT_FALSE(decoder_moved->is_require_grad());
  EXPECT_EQ(1, decoder_moved->device());
  EXPECT_EQ(1, init_calls());
}

TEST_F(ParamTest, MemoKeepsTiedCopiesTiedThroughSetRequireGrad) {
  CountingParam shared = InitializedParam(1.0f);
  CountingParam copy = shared;
  StateMemo memo;
  CountingParam a = shared.set_require_grad(false, &memo);
  CountingParam b = copy.set_require_grad(false, &memo);
  EXPECT_TRUE(a.shares_state_with(b));
}

TEST_F(ParamTest, PrintsIdAndState) {
  CountingParam param = CountingParam::Uninitialized(
      ParamId::FromValue(0xab),
      [](const int&, bool) { return CountingParameter({1}, 0.0f, 0, true); }, 0,
      true, {1});
  std::ostringstream lazy;
  lazy << param;
  EXPECT_EQ("Param(00000000000000ab, lazy)", lazy.str());
  (void)param.val();
  std::ostringstream initialized;
  initialized << param;
  EXPECT_EQ("Param(00000000000000ab, initialized)", initialized.str());
}

TEST(ParamDeathTest, ReadingAMovedFromParamAborts) {
  CountingParam param = InitializedParam(1.0f);
  CountingParam taken = std::move(param);
  EXPECT_DEATH((void)param.val(),
               "read after move");  // NOLINT(bugprone-use-after-move)
}

TEST(ParamDeathTest, MovingAMovedFromParamAborts) {
  CountingParam param = InitializedParam(1.0f);
  CountingParam taken = std::move(param);
  EXPECT_DEATH((void)param.to_device(1), "used after move");  // NOLINT
}

TEST(ParamDeathTest, EmptyInitFunctionAborts) {
  EXPECT_DEATH(
      CountingParam::Uninitialized(ParamId::New(), nullptr, 0, true, {1}),
      "empty init function");
}

// A lazy CountingParam that promises `lazy_shape` on device 0 but whose init
// function produces `produced_shape` on `produced_device`.
CountingParam LazyParamBreakingItsPromise(std::vector<int64_t> lazy_shape,
                                          std::vector<int64_t> produced_shape,
                                          int produced_device) {
  return CountingParam::Uninitialized(
      ParamId::FromValue(0xbad),
      [produced_shape, produced_device](const int&, bool require_grad) {
        return CountingParameter(produced_shape, 1.0f, produced_device,
                                 require_grad);
      },
      0, true, std::move(lazy_shape));
}

TEST(ParamDeathTest, InitProducingAnotherShapeAborts) {
  const CountingParam param = LazyParamBreakingItsPromise({2, 3}, {3, 2}, 0);
  EXPECT_DEATH((void)param.val(),
               "Param 0000000000000bad: the init function produced shape "
               "\\[3, 2\\] on device 0, but the lazy param promised shape "
               "\\[2, 3\\] on device 0");
}

TEST(ParamDeathTest, InitProducingOnAnotherDeviceAborts) {
  const CountingParam param = LazyParamBreakingItsPromise({4}, {4}, 1);
  EXPECT_DEATH((void)param.val(),
               "0000000000000bad: the init function produced shape \\[4\\] "
               "on device 1, but the lazy param promised shape \\[4\\] on "
               "device 0");
}

TEST(ParamDeathTest, RetargetedInitIgnoringTheDeviceAborts) {
  // The init function always produces on device 0; retargeted to device 2 it
  // breaks the promise to_device() made.
  const CountingParam param = LazyParamBreakingItsPromise({4}, {4}, 0);
  const CountingParam moved = param.to_device(2);
  EXPECT_EQ(2, moved.lazy_device());
  EXPECT_DEATH((void)moved.val(),
               "produced shape \\[4\\] on device 0, but the lazy param "
               "promised shape \\[4\\] on device 2");
}

TEST(ParamDeathTest, DerivedValueOfAnotherShapeAborts) {
  const CountingParam param = LazyCountingParam({2, 3});
  const CountingParam transposed =
      param.init_mapper([](CountingParameter value) {
        return CountingParameter({3, 2}, 0.0f, value.device(),
                                 value.is_require_grad());
      });
  EXPECT_DEATH((void)transposed.val(),
               "the derived value produced shape \\[3, 2\\] on device 0, "
               "but the lazy param promised shape \\[2, 3\\] on device 0");
}

TEST_F(ParamTest, LazyValuesThatKeepTheirPromisePassTheCheck) {
  const CountingParam param = LazyCountingParam({2, 3}, /*device=*/1);
  const CountingParam derived = param.set_require_grad(false).to_device(2);
  EXPECT_EQ((std::vector<int64_t>{2, 3}), derived.val().shape());
  EXPECT_EQ(2, derived.val().device());
  EXPECT_EQ(1, param.val().device());
}

}  // namespace
}  // namespace kindling
