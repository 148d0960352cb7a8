// The Backward() engine: summing over paths and ties, frozen inputs, the
// gradient-ready hook, retained results, grad mode, and its contracts.
#include "kindling/autodiff/backward.h"

#include <cmath>
#include <cstdint>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"
#include "tests/autodiff/gradcheck.h"

namespace kindling {
namespace {

using testing::ToDoubles;

Tensor<1, Float> Leaf(std::initializer_list<double> values) {
  return Tensor<1>::FromData<double>(values,
                                     {static_cast<int64_t>(values.size())})
      .set_require_grad(true);
}

std::vector<double> GradOf(const Gradients& grads, ParamId id) {
  std::optional<TensorBase> grad = grads.Get(id);
  EXPECT_TRUE(grad.has_value()) << "no gradient for " << id;
  return !grad.has_value() ? std::vector<double>() : ToDoubles(*grad);
}

TEST(BackwardTest, DiamondSumsBothPaths) {
  const auto x = Leaf({0.5, -1, 2});
  const auto a = x * 2.0;
  const auto b = x.exp();
  const Gradients grads = Backward((a * b).sum());
  // d/dx 2x e^x = 2 e^x + 2x e^x.
  const std::vector<double> grad = GradOf(grads, x.leaf_id());
  ASSERT_EQ(3u, grad.size());
  for (int i = 0; i < 3; ++i) {
    const double v = std::vector<double>{0.5, -1, 2}[i];
    EXPECT_NEAR(2 * std::exp(v) + 2 * v * std::exp(v), grad[i], 1e-12);
  }
  EXPECT_EQ(1u, grads.size());
}

TEST(BackwardTest, SameTensorTwiceInOneOp) {
  const auto x = Leaf({3, -2});
  const Gradients grads = Backward((x * x).sum());
  EXPECT_EQ((std::vector<double>{6, -4}), GradOf(grads, x.leaf_id()));
}

TEST(BackwardTest, LeafGradientsOwnTheirStorage) {
  // add passes one gradient tensor to both inputs; each leaf must still get
  // storage of its own, and none may alias the caller's seed.
  const auto a = Leaf({1, 2});
  const auto b = Leaf({3, 4});
  BackwardOptions options;
  const auto seed = Tensor<1>::FromData<double>({5, 6}, {2});
  options.grad_output = seed.base();
  Gradients grads = Backward(a + b, options);
  std::optional<TensorBase> grad_a = grads.Get(a.leaf_id());
  std::optional<TensorBase> grad_b = grads.Get(b.leaf_id());
  ASSERT_TRUE(grad_a.has_value());
  ASSERT_TRUE(grad_b.has_value());
  EXPECT_NE(grad_a->storage(), grad_b->storage());
  EXPECT_NE(seed.base().storage(), grad_a->storage());
  EXPECT_NE(seed.base().storage(), grad_b->storage());
  EXPECT_EQ((std::vector<double>{5, 6}), ToDoubles(*grad_b));
}

TEST(BackwardTest, FrozenAndDetachedInputsGetNoGradient) {
  const auto trainable = Leaf({1, 2});
  const auto frozen = Tensor<1>::FromData<double>({3, 4}, {2});
  const auto detached = Leaf({5, 6});
  const Gradients grads =
      Backward((trainable * frozen + detached.detach()).sum());
  EXPECT_EQ((std::vector<double>{3, 4}), GradOf(grads, trainable.leaf_id()));
  EXPECT_FALSE(grads.Get(detached.leaf_id()).has_value());
  EXPECT_EQ(1u, grads.size());
  EXPECT_FALSE(frozen.is_require_grad());
  EXPECT_FALSE(detached.detach().is_require_grad());
  EXPECT_TRUE(detached.is_require_grad());  // detach() made a new handle
}

TEST(BackwardTest, FrozenParamGetsNoGradient) {
  const auto value = Tensor<1>::FromData<double>({1, 2}, {2});
  const auto trained = Param<Tensor<1>>::Initialized(
      ParamId::New(), value.set_require_grad(true));
  const auto frozen = Param<Tensor<1>>::Initialized(ParamId::New(), value)
                          .set_require_grad(false);
  const Gradients grads = Backward((*trained * *frozen).sum());
  EXPECT_EQ((std::vector<double>{1, 2}), GradOf(grads, trained.id()));
  EXPECT_FALSE(grads.Get(frozen.id()).has_value());
}

TEST(BackwardTest, TiedParamsGetTheSum) {
  // Two fields holding one Param (a copy shares state and id), and a second
  // value under the same id: all contributions land on one entry.
  const auto embed =
      Param<Tensor<1>>::Initialized(ParamId::New(), Leaf({1, 2}));
  const Param<Tensor<1>> decoder = embed;
  const Param<Tensor<1>> reloaded = embed.with_value(
      Tensor<1>::FromData<double>({7, 7}, {2}).set_require_grad(true));
  ASSERT_EQ(embed.id(), reloaded->leaf_id());
  const auto loss = (*embed * 3.0).sum() + (*decoder * 5.0).sum() +
                    (*reloaded * *reloaded).sum();
  const Gradients grads = Backward(loss);
  EXPECT_EQ((std::vector<double>{3 + 5 + 14, 3 + 5 + 14}),
            GradOf(grads, embed.id()));
  EXPECT_EQ(1u, grads.size());
}

TEST(BackwardTest, HookFiresOncePerLeafWithTheFinalGradient) {
  // loss = sum(w2 * relu(w1 * x)) + sum(w1): w1 gets two contributions, and
  // w2's gradient is final before w1's.
  const auto x = Tensor<1>::FromData<double>({1, -2, 3}, {3});
  const auto w1 = Leaf({0.5, 0.5, -1});
  const auto w2 = Leaf({2, 3, 4});
  const auto loss = (w2 * (w1 * x).relu()).sum() + w1.sum();
  std::vector<ParamId> order;
  std::vector<std::vector<double>> seen;
  BackwardOptions options;
  options.on_gradient_ready = [&](ParamId id, const TensorBase& grad) {
    order.push_back(id);
    seen.push_back(ToDoubles(grad));
  };
  const Gradients grads = Backward(loss, options);
  ASSERT_EQ(2u, order.size());
  EXPECT_EQ(w2.leaf_id(), order[0]);
  EXPECT_EQ(w1.leaf_id(), order[1]);
  EXPECT_EQ(GradOf(grads, w2.leaf_id()), seen[0]);
  EXPECT_EQ(GradOf(grads, w1.leaf_id()), seen[1]);
  // w1: x * w2 where w1 * x > 0, plus 1.
  EXPECT_EQ((std::vector<double>{3, 1, 1}), seen[1]);
  EXPECT_EQ((std::vector<double>{0.5, 0, 0}), seen[0]);
}

TEST(BackwardTest, HookSeesTiedParamsOnceWithTheirSum) {
  const auto w = Leaf({1, 2});
  const auto tied = w.as_param_leaf(w.leaf_id());  // same id, new handle
  int calls = 0;
  BackwardOptions options;
  options.on_gradient_ready = [&](ParamId id, const TensorBase& grad) {
    ++calls;
    EXPECT_EQ(w.leaf_id(), id);
    EXPECT_EQ((std::vector<double>{5, 5}), ToDoubles(grad));
  };
  const Gradients grads =
      Backward((w * 2.0).sum() + (tied * 3.0).sum(), options);
  EXPECT_EQ(1, calls);
}

TEST(BackwardTest, RetainedResultsReportTheirGradient) {
  const auto x = Leaf({1, -3});
  const auto hidden = (x * 2.0).retain_grad();
  const auto unmarked = x * 4.0;
  const Gradients grads = Backward((hidden * hidden).sum() + unmarked.sum());
  std::optional<TensorBase> hidden_grad = grads.Get(hidden.base());
  ASSERT_TRUE(hidden_grad.has_value());
  EXPECT_EQ((std::vector<double>{4, -12}), ToDoubles(*hidden_grad));  // 2h
  EXPECT_FALSE(grads.Get(unmarked).has_value());
  EXPECT_EQ((std::vector<double>{8 + 4, -24 + 4}), GradOf(grads, x.leaf_id()));
}

// Get() by Param (typed), by leaf tensor (typed or not) and by id return the
// same gradient, as handles that outlive the Gradients object; a tensor
// that is neither a require-grad leaf nor a retained result has none.
TEST(BackwardTest, GetByParamByLeafAndByIdReturnHandles) {
  auto weight = Param<Tensor<1>>::Initialized(
      ParamId::New(),
      Tensor<1>::FromData<double>({1, 2, 3}, {3}).set_require_grad(true));
  const auto x = Leaf({4, 5, 6});
  std::optional<Tensor<1>> by_param;
  std::optional<TensorBase> by_id;
  std::optional<Tensor<1>> by_leaf;
  {
    const Gradients grads = Backward((*weight * x).sum());
    by_param = grads.Get(weight);
    by_id = grads.Get(weight.id());
    by_leaf = grads.Get(x);
    EXPECT_EQ(grads.Get(x.base())->data(), by_leaf->base().data());
    EXPECT_FALSE(grads.Get(x * 2.0).has_value());                // an op result
    EXPECT_FALSE(grads.Get(Tensor<1>::Zeros({3})).has_value());  // no grad
  }  // the Gradients object is gone; the handles still hold the values
  ASSERT_TRUE(by_param.has_value() && by_id.has_value() && by_leaf.has_value());
  EXPECT_EQ((std::vector<double>{4, 5, 6}), ToDoubles(by_param->base()));
  EXPECT_EQ(by_param->base().data(), by_id->data());
  EXPECT_EQ((std::vector<double>{1, 2, 3}), ToDoubles(by_leaf->base()));
}

TEST(BackwardTest, LeafLossAndNonScalarLoss) {
  const auto x = Leaf({1, 2});
  BackwardOptions options;
  options.grad_output = Tensor<1>::FromData<double>({5, 6}, {2}).base();
  EXPECT_EQ((std::vector<double>{5, 6}),
            GradOf(Backward(x, options), x.leaf_id()));
  EXPECT_EQ((std::vector<double>{10, 12}),
            GradOf(Backward(x * 2.0, options), x.leaf_id()));
}

TEST(BackwardTest, RetainGraphRunsTwice) {
  const auto x = Leaf({1, 2});
  const auto loss = (x * x * x).sum();
  BackwardOptions options;
  options.retain_graph = true;
  const Gradients first = Backward(loss, options);
  const Gradients second = Backward(loss, options);
  EXPECT_EQ((std::vector<double>{3, 12}), GradOf(first, x.leaf_id()));
  EXPECT_EQ(GradOf(first, x.leaf_id()), GradOf(second, x.leaf_id()));
}

TEST(BackwardDeathTest, SecondBackwardWithoutRetainGraphAborts) {
  const auto x = Leaf({1, 2});
  const auto loss = (x * x).sum();
  const Gradients grads = Backward(loss);
  EXPECT_DEATH((void)Backward(loss), "already run backward");
}

TEST(BackwardDeathTest, LossThatNeedsNoGradientAborts) {
  const auto x = Tensor<1>::FromData<double>({1, 2}, {2});
  EXPECT_DEATH((void)Backward(x.sum()), "does not require grad");
}

TEST(GradModeTest, NoGradGuardRecordsNothing) {
  const auto x = Leaf({1, 2, 3, 4});
  {
    NoGradGuard no_grad;
    EXPECT_FALSE(IsGradEnabled());
    EXPECT_FALSE((x * 2.0).is_require_grad());
    EXPECT_FALSE(x.exp().sum().is_require_grad());
    EXPECT_FALSE(x.reshape<2>({2, 2}).t().is_require_grad());
    EXPECT_FALSE(x.slice(0, 0, 4, 2).unsqueeze(0).is_require_grad());
    EXPECT_FALSE(matmul(x.reshape<2>({2, 2}), x.reshape<2>({2, 2}))
                     .softmax(1)
                     .is_require_grad());
    EXPECT_FALSE(x.clone().is_require_grad());
    EXPECT_TRUE(x.is_require_grad());  // the leaf itself is unchanged
  }
  EXPECT_TRUE(IsGradEnabled());
  const auto y = x * 2.0;
  EXPECT_TRUE(y.is_require_grad());
  EXPECT_FALSE(y.is_leaf());
}

TEST(GradModeTest, GuardsNestAndAreThreadLocal) {
  NoGradGuard outer;
  {
    GradModeGuard inner(true);
    EXPECT_TRUE(IsGradEnabled());
  }
  EXPECT_FALSE(IsGradEnabled());
  bool other_thread = false;
  std::thread([&] { other_thread = IsGradEnabled(); }).join();
  EXPECT_TRUE(other_thread);
}

TEST(GradModeTest, IntegerAndBoolResultsAreNotRecorded) {
  const auto x = Leaf({1, -2});
  EXPECT_FALSE(x.greater(0.0).is_require_grad());
  EXPECT_FALSE(x.argmax(0).is_require_grad());
  EXPECT_FALSE(x.to_kind<Int>().is_require_grad());
}

}  // namespace
}  // namespace kindling
