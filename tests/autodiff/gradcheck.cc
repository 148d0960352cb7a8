#include "tests/autodiff/gradcheck.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "kindling/autodiff/backward.h"
#include "kindling/tensor/grad_mode.h"
#include "kindling/tensor/ops.h"

namespace kindling::testing {
namespace {

TensorBase FromDoubles(const std::vector<double>& values, const Shape& shape) {
  return TensorBase::FromHost(values.data(), shape, DType::kF64, Device::Cpu());
}

// Sum(out * weights), the scalar whose derivative the check compares.
double Contract(const TensorBase& out, const std::vector<double>& weights) {
  const std::vector<double> values = ToDoubles(out);
  double sum = 0;
  for (size_t i = 0; i < values.size(); ++i) sum += values[i] * weights[i];
  return sum;
}

}  // namespace

std::vector<double> ToDoubles(const TensorBase& tensor) {
  NoGradGuard no_grad;
  const TensorBase converted = tensor.To(DType::kF64).Contiguous();
  std::vector<double> values(converted.numel());
  converted.CopyToHost(values.data());
  return values;
}

TensorBase RandomLeaf(const Shape& shape, Generator& generator, double low,
                      double high) {
  std::vector<double> values(shape.num_elements());
  for (double& value : values) {
    value = low + (high - low) * generator.NextUniform();
  }
  return FromDoubles(values, shape).set_require_grad(true);
}

::testing::AssertionResult Gradcheck(const GradcheckFn& fn,
                                     const std::vector<TensorBase>& inputs,
                                     const GradcheckOptions& options) {
  const TensorBase out = fn(inputs);
  if (!out.is_require_grad()) {
    return ::testing::AssertionFailure()
           << "the output " << out.ToString() << " does not require grad";
  }
  Generator generator(/*seed=*/12345);
  std::vector<double> weights(out.numel());
  for (double& weight : weights) weight = generator.NextNormal();
  BackwardOptions backward_options;
  backward_options.grad_output =
      FromDoubles(weights, out.shape()).To(out.dtype());
  const Gradients grads = Backward(out, backward_options);

  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].is_require_grad()) continue;
    std::optional<TensorBase> analytic_grad = grads.Get(inputs[i].leaf_id());
    if (analytic_grad.has_value() &&
        analytic_grad->shape() != inputs[i].shape()) {
      return ::testing::AssertionFailure()
             << "input " << i << ": gradient " << analytic_grad->ToString()
             << " for " << inputs[i].ToString();
    }
    const std::vector<double> analytic =
        analytic_grad.has_value() ? ToDoubles(*analytic_grad)
                                  : std::vector<double>(inputs[i].numel(), 0.0);
    const std::vector<double> base = ToDoubles(inputs[i]);
    std::vector<TensorBase> perturbed(inputs.begin(), inputs.end());
    for (int64_t k = 0; k < inputs[i].numel(); ++k) {
      std::vector<double> values = base;
      const auto evaluate = [&](double delta) {
        values[k] = base[k] + delta;
        perturbed[i] =
            FromDoubles(values, inputs[i].shape()).To(inputs[i].dtype());
        NoGradGuard no_grad;
        return Contract(fn(perturbed), weights);
      };
      const double numeric =
          (evaluate(options.eps) - evaluate(-options.eps)) / (2 * options.eps);
      const double error = std::abs(analytic[k] - numeric);
      if (!(error <= options.absolute_tolerance +
                         options.relative_tolerance * std::abs(numeric))) {
        return ::testing::AssertionFailure()
               << "input " << i << " " << inputs[i].ToString() << " element "
               << k << ": analytic " << analytic[k] << ", numeric " << numeric;
      }
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace kindling::testing
