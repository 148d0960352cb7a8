// The autodiff example of docs/autodiff.md, kept compiling and converging:
// linear regression with two Params, Backward() and a hand-written SGD step.
#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/autodiff/backward.h"
#include "kindling/core/param.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/tensor.h"

namespace kindling {
namespace {

TEST(ReadmeExampleTest, LinearRegressionConverges) {
  // --- docs/autodiff.md example begins ---
  Generator generator(/*seed=*/0);
  const Tensor<2> x = Tensor<2>::RandomNormal({64, 3}, generator);
  const Tensor<2> w_true = Tensor<2>::FromData<float>({1, -2, 3}, {3, 1});
  const Tensor<2> y = matmul(x, w_true) + 0.5;  // the targets

  auto w = Param<Tensor<2>>::Initialized(
      ParamId::New(), Tensor<2>::Zeros({3, 1}).set_require_grad(true));
  auto b = Param<Tensor<1>>::Initialized(
      ParamId::New(), Tensor<1>::Zeros({1}).set_require_grad(true));

  float loss_value = 0;
  for (int step = 0; step < 200; ++step) {
    const Tensor<0> loss = (matmul(x, *w) + *b - y).pow(2.0).mean();
    loss_value = loss.item<float>();
    const Gradients grads = Backward(loss);  // keyed by ParamId
    const Tensor<2> dw = *grads.Get(w);      // typed by the Param
    const Tensor<1> db = *grads.Get(b);
    NoGradGuard no_grad;  // the update itself records nothing
    w = w.with_value((*w - dw * 0.1).set_require_grad(true));
    b = b.with_value((*b - db * 0.1).set_require_grad(true));
  }
  // w -> [1, -2, 3], b -> 0.5, loss -> 0
  // --- docs/autodiff.md example ends ---
  EXPECT_LT(loss_value, 1e-6);
  const std::vector<float> learned = w->to_data<float>();
  EXPECT_NEAR(1, learned[0], 1e-3);
  EXPECT_NEAR(-2, learned[1], 1e-3);
  EXPECT_NEAR(3, learned[2], 1e-3);
  EXPECT_NEAR(0.5, b->item<float>(), 1e-3);
  EXPECT_EQ(w.id(), w->leaf_id());
}

}  // namespace
}  // namespace kindling
