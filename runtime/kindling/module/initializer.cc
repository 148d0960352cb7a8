#include "kindling/module/initializer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "kindling/core/check.h"
#include "kindling/tensor/generator.h"
#include "kindling/tensor/philox_generator.h"
#include "kindling/tensor/random_ops.h"

namespace kindling {
namespace {

// The process-wide seed source. A fixed default seed keeps programs that never
// call SetInitSeed() reproducible too.
constexpr uint64_t kDefaultInitSeed = 0x6b696e646c696e67;  // "kindling"

struct SeedSource {
  std::mutex mutex;
  Generator generator{kDefaultInitSeed};
};

SeedSource& GlobalSeedSource() {
  static SeedSource* const source = new SeedSource();
  return *source;
}

// Orthonormal rows (rows <= cols) or columns (rows > cols) of a rows x cols
// matrix, from modified Gram-Schmidt on a standard normal matrix (the Q of its
// QR decomposition, with R's diagonal made positive).
std::vector<float> OrthogonalValues(int64_t rows, int64_t cols, double gain,
                                    uint64_t seed) {
  // Work on the taller orientation: columns of a (long x short) matrix.
  const bool transpose = rows < cols;
  const int64_t long_dim = transpose ? cols : rows;
  const int64_t short_dim = transpose ? rows : cols;
  // q[j] is column j, of length long_dim.
  // Column j holds normals [j * long_dim, (j + 1) * long_dim) of the stream.
  PhiloxGenerator generator(seed);
  const TensorBase normals = ops::RandomNormal(
      Shape{short_dim, long_dim}, DType::kF64, Device::Cpu(), generator, 0, 1);
  const double* normal = normals.data_as<const double>();
  std::vector<std::vector<double>> q(short_dim, std::vector<double>(long_dim));
  for (int64_t j = 0; j < short_dim; ++j) {
    std::copy(normal + j * long_dim, normal + (j + 1) * long_dim, q[j].begin());
  }
  for (int64_t j = 0; j < short_dim; ++j) {
    for (int64_t k = 0; k < j; ++k) {
      double dot = 0;
      for (int64_t i = 0; i < long_dim; ++i) dot += q[k][i] * q[j][i];
      for (int64_t i = 0; i < long_dim; ++i) q[j][i] -= dot * q[k][i];
    }
    double norm = 0;
    for (double x : q[j]) norm += x * x;
    norm = std::sqrt(norm);
    // Dividing by the positive norm is what makes diag(R) positive.
    for (double& x : q[j]) x /= norm;
  }
  std::vector<float> values(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      const double x = transpose ? q[r][c] : q[c][r];
      values[r * cols + c] = static_cast<float>(gain * x);
    }
  }
  return values;
}

}  // namespace

void SetInitSeed(uint64_t seed) {
  SeedSource& source = GlobalSeedSource();
  std::lock_guard<std::mutex> lock(source.mutex);
  source.generator = Generator(seed);
}

uint64_t NextInitSeed() {
  SeedSource& source = GlobalSeedSource();
  std::lock_guard<std::mutex> lock(source.mutex);
  return source.generator.NextBits();
}

Initializer Initializer::Constant(double value) {
  return Initializer(Kind::kConstant, value, 0, false);
}
Initializer Initializer::Zeros() { return Constant(0); }
Initializer Initializer::Ones() { return Constant(1); }

Initializer Initializer::Uniform(double min, double max) {
  KINDLING_CHECK(min <= max, "Initializer::Uniform: min %g > max %g", min, max);
  return Initializer(Kind::kUniform, min, max, false);
}

Initializer Initializer::Normal(double mean, double std) {
  KINDLING_CHECK(std >= 0, "Initializer::Normal: negative std %g", std);
  return Initializer(Kind::kNormal, mean, std, false);
}

Initializer Initializer::KaimingUniform(double gain, bool fan_out_only) {
  return Initializer(Kind::kKaimingUniform, gain, 0, fan_out_only);
}
Initializer Initializer::KaimingNormal(double gain, bool fan_out_only) {
  return Initializer(Kind::kKaimingNormal, gain, 0, fan_out_only);
}
Initializer Initializer::XavierUniform(double gain) {
  return Initializer(Kind::kXavierUniform, gain, 0, false);
}
Initializer Initializer::XavierNormal(double gain) {
  return Initializer(Kind::kXavierNormal, gain, 0, false);
}
Initializer Initializer::Orthogonal(double gain) {
  return Initializer(Kind::kOrthogonal, gain, 0, false);
}

void Initializer::CheckCanSample(const Shape& shape,
                                 std::optional<int64_t> fan_in,
                                 std::optional<int64_t> fan_out) const {
  switch (kind_) {
    case Kind::kKaimingUniform:
    case Kind::kKaimingNormal: {
      const bool has_fan =
          fan_out_only_ ? fan_out.has_value() : fan_in.has_value();
      KINDLING_CHECK(has_fan, "%s needs %s; pass it to Init()", ToString(),
                     fan_out_only_ ? "fan_out" : "fan_in");
      KINDLING_CHECK(KaimingFan(fan_in, fan_out) > 0, "%s: fan must be > 0",
                     ToString());
      break;
    }
    case Kind::kXavierUniform:
    case Kind::kXavierNormal:
      KINDLING_CHECK(fan_in.has_value() && fan_out.has_value(),
                     "%s needs both fan_in and fan_out; pass them to Init()",
                     ToString());
      KINDLING_CHECK(*fan_in + *fan_out > 0, "%s: fan_in + fan_out must be > 0",
                     ToString());
      break;
    case Kind::kOrthogonal:
      KINDLING_CHECK(shape.rank() >= 2, "%s needs a shape of rank >= 2, got %s",
                     ToString(), shape.ToString());
      break;
    default:
      break;
  }
}

int64_t Initializer::KaimingFan(std::optional<int64_t> fan_in,
                                std::optional<int64_t> fan_out) const {
  return fan_out_only_ ? *fan_out : *fan_in;
}

TensorBase Initializer::Sample(const Shape& shape,
                               std::optional<int64_t> fan_in,
                               std::optional<int64_t> fan_out, uint64_t seed,
                               const Device& device) const {
  CheckCanSample(shape, fan_in, fan_out);
  constexpr DType kDType = DType::kF32;
  PhiloxGenerator generator(seed);
  switch (kind_) {
    case Kind::kConstant:
      return ops::Full(shape, a_, kDType, device);
    case Kind::kUniform:
      return ops::RandomUniform(shape, kDType, device, generator, a_, b_);
    case Kind::kNormal:
      return ops::RandomNormal(shape, kDType, device, generator, a_, b_);
    case Kind::kKaimingUniform: {
      const double bound = a_ * std::sqrt(3.0 / KaimingFan(fan_in, fan_out));
      return ops::RandomUniform(shape, kDType, device, generator, -bound,
                                bound);
    }
    case Kind::kKaimingNormal:
      return ops::RandomNormal(shape, kDType, device, generator, 0,
                               a_ / std::sqrt(KaimingFan(fan_in, fan_out)));
    case Kind::kXavierUniform: {
      const double bound = a_ * std::sqrt(6.0 / (*fan_in + *fan_out));
      return ops::RandomUniform(shape, kDType, device, generator, -bound,
                                bound);
    }
    case Kind::kXavierNormal:
      return ops::RandomNormal(shape, kDType, device, generator, 0,
                               a_ * std::sqrt(2.0 / (*fan_in + *fan_out)));
    case Kind::kOrthogonal: {
      const int64_t count = shape.num_elements();
      const std::vector<float> values = OrthogonalValues(
          shape[0], count / std::max<int64_t>(shape[0], 1), a_, seed);
      return TensorBase::FromHost(values.data(), shape, kDType, device);
    }
  }
  return TensorBase();
}

std::string Initializer::ToString() const {
  switch (kind_) {
    case Kind::kConstant:
      return absl::StrFormat("Constant(%g)", a_);
    case Kind::kUniform:
      return absl::StrFormat("Uniform(%g, %g)", a_, b_);
    case Kind::kNormal:
      return absl::StrFormat("Normal(mean=%g, std=%g)", a_, b_);
    case Kind::kKaimingUniform:
      return absl::StrFormat("KaimingUniform(gain=%g, fan_out_only=%s)", a_,
                             fan_out_only_ ? "true" : "false");
    case Kind::kKaimingNormal:
      return absl::StrFormat("KaimingNormal(gain=%g, fan_out_only=%s)", a_,
                             fan_out_only_ ? "true" : "false");
    case Kind::kXavierUniform:
      return absl::StrFormat("XavierUniform(gain=%g)", a_);
    case Kind::kXavierNormal:
      return absl::StrFormat("XavierNormal(gain=%g)", a_);
    case Kind::kOrthogonal:
      return absl::StrFormat("Orthogonal(gain=%g)", a_);
  }
  return "Initializer(?)";
}

}  // namespace kindling
