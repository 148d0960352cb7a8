// Gradcheck: compares the gradients Backward() computes with central finite
// differences, for tests of every op's backward formula.
//
//   Generator generator(1);
//   std::vector<TensorBase> inputs = {RandomLeaf({3, 4}, generator)};
//   EXPECT_TRUE(Gradcheck(
//       [](std::span<const TensorBase> x) {
//         return ops::Unary(UnaryOp::kExp, x[0].Transpose(0, 1));
//       },
//       inputs));
//
// The function's output is contracted with a fixed random tensor R, so the
// check covers a full vector-Jacobian product, not only ones: the analytic
// side is Backward(out, grad_output = R); the numeric side perturbs each
// element of each input that requires grad by +-eps and differences
// sum(fn(inputs) * R). Run it in f64.
#ifndef KINDLING_TESTS_AUTODIFF_GRADCHECK_H_
#define KINDLING_TESTS_AUTODIFF_GRADCHECK_H_

#include <functional>
#include <span>
#include <vector>

#include "gtest/gtest.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::testing {

using GradcheckFn = std::function<TensorBase(std::span<const TensorBase>)>;

struct GradcheckOptions {
  double eps = 1e-6;
  double absolute_tolerance = 1e-6;
  double relative_tolerance = 1e-5;
};

// Gradcheck() succeeds when, for every input that requires grad, every
// element's analytic gradient matches the finite difference within
// tolerance; the message names the input, the element and both values.
::testing::AssertionResult Gradcheck(const GradcheckFn& fn,
                                     const std::vector<TensorBase>& inputs,
                                     const GradcheckOptions& options = {});

// RandomLeaf() is an f64 leaf of `shape` that requires grad, with elements
// uniform in [low, high).
TensorBase RandomLeaf(const Shape& shape, Generator& generator, double low = -2,
                      double high = 2);

// ToDoubles() copies a tensor's elements to the host as doubles.
std::vector<double> ToDoubles(const TensorBase& tensor);

}  // namespace kindling::testing

#endif  // KINDLING_TESTS_AUTODIFF_GRADCHECK_H_
