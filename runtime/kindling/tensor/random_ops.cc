#include "kindling/tensor/random_ops.h"

#include <cmath>
#include <limits>
#include <string>

#include "kindling/core/check.h"
#include "kindling/tensor/backend.h"
#include "kindling/tensor/grad_node.h"

namespace kindling::ops {
namespace {

void CheckFloating(DType dtype, const char* op) {
  KINDLING_CHECK(IsFloatingDType(dtype),
                 "%s: dtype %s is not a floating type (f32, f64, f16, bf16)",
                 op, std::string(DTypeName(dtype)));
}

void CheckDropProbability(double prob, const char* op) {
  KINDLING_CHECK(prob >= 0 && prob < 1, "%s: prob %g not in [0, 1)", op, prob);
}

// LargestFinite() is the largest finite value of a floating dtype.
double LargestFinite(DType dtype) {
  switch (dtype) {
    case DType::kF16:
      return 65504.0;
    case DType::kBF16:
      return 0x1.fep127;
    case DType::kF32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// Fill() allocates the output and reserves its blocks from `generator`.
TensorBase Fill(RandomDistribution distribution, const Shape& shape,
                DType dtype, const Device& device, PhiloxGenerator& generator,
                double a, double b) {
  TensorBase result = TensorBase::Empty(shape, dtype, device);
  const uint64_t offset = generator.ReserveBlocks(
      PhiloxBlocksForFill(distribution, dtype, result.numel()));
  if (result.numel() > 0) {
    GetBackend(device).FillRandom(result, distribution, generator.seed(),
                                  offset, a, b);
  }
  return result;
}

}  // namespace

TensorBase RandomUniform(const Shape& shape, DType dtype, const Device& device,
                         PhiloxGenerator& generator, double low, double high) {
  CheckFloating(dtype, "random_uniform");
  KINDLING_CHECK(std::isfinite(low) && std::isfinite(high) && low <= high,
                 "random_uniform: bad range [%g, %g)", low, high);
  // The kernel computes low + u * (high - low) in the dtype (float for the
  // 16-bit ones): bounds and width must be finite there.
  const double largest = LargestFinite(dtype);
  KINDLING_CHECK(std::abs(low) <= largest && std::abs(high) <= largest &&
                     high - low <= largest,
                 "random_uniform: range [%g, %g) overflows %s", low, high,
                 std::string(DTypeName(dtype)));
  return Fill(RandomDistribution::kUniform, shape, dtype, device, generator,
              low, high);
}

TensorBase RandomNormal(const Shape& shape, DType dtype, const Device& device,
                        PhiloxGenerator& generator, double mean, double std) {
  CheckFloating(dtype, "random_normal");
  KINDLING_CHECK(std::isfinite(mean) && std::isfinite(std) && std >= 0,
                 "random_normal: bad mean %g or std %g", mean, std);
  return Fill(RandomDistribution::kNormal, shape, dtype, device, generator,
              mean, std);
}

TensorBase DropoutMask(const Shape& shape, DType dtype, const Device& device,
                       double prob, uint64_t seed, uint64_t offset) {
  CheckFloating(dtype, "dropout_mask");
  CheckDropProbability(prob, "dropout_mask");
  TensorBase result = TensorBase::Empty(shape, dtype, device);
  if (result.numel() > 0) {
    GetBackend(device).FillRandom(result, RandomDistribution::kBernoulli, seed,
                                  offset, prob, 1 / (1 - prob));
  }
  return result;
}

uint64_t ReserveDropoutBlocks(PhiloxGenerator& generator,
                              const TensorBase& in) {
  return generator.ReserveBlocks(PhiloxBlocksForFill(
      RandomDistribution::kBernoulli, in.dtype(), in.numel()));
}

TensorBase Dropout(const TensorBase& in, double prob, uint64_t seed,
                   uint64_t offset) {
  CheckFloating(in.dtype(), "dropout");
  CheckDropProbability(prob, "dropout");
  const auto forward = [&] {
    TensorBase result = TensorBase::Empty(in.shape(), in.dtype(), in.device());
    if (result.numel() > 0) {
      GetBackend(in.device()).Dropout(result, in, prob, seed, offset);
    }
    return result;
  };
  if (!autodiff::ShouldRecord(in)) return forward();
  TensorBase out = autodiff::Untracked(forward);
  // dropout(x) = x * mask, so its gradient is the same mask applied to the
  // output gradient: regenerated from (seed, offset), never stored.
  return autodiff::Record(
      "dropout", {in}, std::move(out),
      [prob, seed, offset](const TensorBase& grad) -> GradList {
        return {Dropout(grad, prob, seed, offset)};
      });
}

}  // namespace kindling::ops
