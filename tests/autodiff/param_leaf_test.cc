// A Param's value is always a leaf carrying the Param's own id, whichever way
// the value was made: init, lazy init, map, with_value, load, to_device, fork.
#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using TensorParam = Param<Tensor<2>>;

Tensor<2> Values() { return Tensor<2>::FromData<double>({1, 2, 3, 4}, {2, 2}); }

void ExpectLeafOf(const TensorParam& param) {
  ASSERT_TRUE(param->is_require_grad());
  EXPECT_TRUE(param->is_leaf());
  EXPECT_EQ(param.id(), param->leaf_id());
  // And backward reports under that id.
  const Gradients grads = Backward((*param * 2.0).sum());
  ASSERT_TRUE(grads.Get(param.id()).has_value());
  EXPECT_EQ((std::vector<double>(4, 2.0)),
            testing::ToDoubles(*grads.Get(param.id())));
}

TEST(ParamLeafTest, InitializedValueTakesTheParamId) {
  ExpectLeafOf(TensorParam::Initialized(ParamId::New(),
                                        Values().set_require_grad(true)));
}

TEST(ParamLeafTest, LazyInitTakesTheParamId) {
  const TensorParam param = TensorParam::Uninitialized(
      ParamId::New(),
      [](const Device&, bool require_grad) {
        return Values().set_require_grad(require_grad);
      },
      Device::Cpu(), /*require_grad=*/true, Shape{2, 2});
  ExpectLeafOf(param);
  ExpectLeafOf(param.init_mapper([](Tensor<2> v) { return v * 1.0; }));
}

TEST(ParamLeafTest, MapDetachesAGraphBuildingFunction) {
  const TensorParam param =
      TensorParam::Initialized(ParamId::New(), Values().set_require_grad(true));
  // v * 3 is an op result recorded on the old leaf; the new value must not
  // keep that graph.
  const TensorParam mapped = param.map([](Tensor<2> v) { return v * 3.0; });
  ExpectLeafOf(mapped);
  EXPECT_EQ((std::vector<double>{3, 6, 9, 12}), mapped->to_data<double>());
}

TEST(ParamLeafTest, WithValueLoadToDeviceForkAndSetRequireGrad) {
  const TensorParam param =
      TensorParam::Initialized(ParamId::New(), Values().set_require_grad(true));
  ExpectLeafOf(param.with_value(Values().set_require_grad(true)));
  ExpectLeafOf(param.load(Values()));  // takes the param's flag
  ExpectLeafOf(param.to_device(Device::Cpu()));
  ExpectLeafOf(param.fork(Device::Cpu()));
  const TensorParam frozen = param.set_require_grad(false);
  EXPECT_FALSE(frozen->is_require_grad());
  ExpectLeafOf(frozen.set_require_grad(true));
}

TEST(ParamLeafTest, WithIdRetagsTheValue) {
  // What loading a checkpoint does: load, then adopt the recorded id.
  const TensorParam param =
      TensorParam::Initialized(ParamId::New(), Values().set_require_grad(true));
  const ParamId recorded = ParamId::New();
  const TensorParam loaded = param.load(Values()).with_id(recorded);
  EXPECT_EQ(recorded, loaded.id());
  ExpectLeafOf(loaded);
  EXPECT_EQ(param.id(), param->leaf_id());  // the original keeps its id
  EXPECT_TRUE(param.with_id(param.id()).shares_state_with(param));
}

TEST(ParamLeafTest, ForkedParamsKeepTheirIdButNotTheirStorage) {
  const TensorParam param =
      TensorParam::Initialized(ParamId::New(), Values().set_require_grad(true));
  const TensorParam fork = param.fork(Device::Cpu());
  EXPECT_EQ(param.id(), fork->leaf_id());
  EXPECT_FALSE(fork->shares_storage_with(*param));
}

}  // namespace
}  // namespace kindling
