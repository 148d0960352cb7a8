// Initializer: how a layer's parameters get their first values, lazily.
//
// Init() returns an *uninitialized* Param: nothing is allocated until the
// parameter is first read, so building a model only to load a checkpoint into
// it costs nothing. The random initializers are reproducible: each Param draws
// its own 64-bit seed from the process-wide seed source when it is created,
// so its values depend on creation order (fixed by the program) and not on
// the order in which lazy params happen to be read.
//
//   kindling::SetInitSeed(42);
//   auto w = kindling::Initializer::KaimingUniform(1.0 / std::sqrt(3.0))
//                .Init<2>({784, 128}, Device::Cpu(), /*fan_in=*/784,
//                         /*fan_out=*/128);
//
// Fans follow Burn (and PyTorch): fan_in is the number of inputs feeding one
// output, fan_out the number of outputs one input feeds. Kaiming needs fan_in
// (or fan_out with fan_out_only), Xavier needs both; asking for one without
// the fan it needs is a programming error that aborts at Init(), naming the
// initializer and the missing fan.
#ifndef KINDLING_MODULE_INITIALIZER_H_
#define KINDLING_MODULE_INITIALIZER_H_

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>

#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling {

// SetInitSeed() restarts the process-wide seed source that Init() draws from.
// Thread-safe.
void SetInitSeed(uint64_t seed);

// NextInitSeed() draws the next seed. Thread-safe.
uint64_t NextInitSeed();

class Initializer {
 public:
  static Initializer Constant(double value);
  static Initializer Zeros();
  static Initializer Ones();
  // Uniform in [min, max). REQUIRES: min <= max.
  static Initializer Uniform(double min, double max);
  // Normal(mean, std). REQUIRES: std >= 0.
  static Initializer Normal(double mean, double std);
  // Uniform in [-b, b) with b = gain * sqrt(3 / fan).
  static Initializer KaimingUniform(double gain, bool fan_out_only = false);
  // Normal(0, gain / sqrt(fan)).
  static Initializer KaimingNormal(double gain, bool fan_out_only = false);
  // Uniform in [-b, b) with b = gain * sqrt(6 / (fan_in + fan_out)).
  static Initializer XavierUniform(double gain);
  // Normal(0, gain * sqrt(2 / (fan_in + fan_out))).
  static Initializer XavierNormal(double gain);
  // gain * Q, Q with orthonormal rows or columns (from the QR decomposition
  // of a standard normal matrix, signs fixed by diag(R)). The shape is
  // flattened to [dim 0, product of the rest]. REQUIRES: rank >= 2.
  static Initializer Orthogonal(double gain);

  // Init() returns a lazy Param of `shape` on `device` whose init function
  // produces Sample() values. Allocates nothing.
  template <int D>
  Param<Tensor<D>> Init(const Shape& shape, const Device& device,
                        std::optional<int64_t> fan_in = std::nullopt,
                        std::optional<int64_t> fan_out = std::nullopt,
                        bool require_grad = true) const {
    CheckCanSample(shape, fan_in, fan_out);
    const uint64_t seed = NextInitSeed();
    const Initializer initializer = *this;
    return Param<Tensor<D>>::Uninitialized(
        ParamId::New(),
        [initializer, shape, fan_in, fan_out, seed](const Device& init_device,
                                                    bool init_require_grad) {
          return Tensor<D>(initializer.Sample(shape, fan_in, fan_out, seed,
                                              init_device))
              .set_require_grad(init_require_grad);
        },
        device, require_grad, shape);
  }

  // Sample() is the f32 tensor of `shape` on `device` drawn from `seed`.
  // The random kinds fill it in one pass on the device's backend from
  // PhiloxGenerator(seed) (philox.h), so a seed gives the same values on
  // every device; Orthogonal draws its normal matrix that way on the CPU and
  // orthonormalizes it there.
  TensorBase Sample(const Shape& shape, std::optional<int64_t> fan_in,
                    std::optional<int64_t> fan_out, uint64_t seed,
                    const Device& device = Device::Cpu()) const;

  // ToString() is e.g. "KaimingUniform(gain=0.57735, fan_out_only=false)".
  std::string ToString() const;
  friend std::ostream& operator<<(std::ostream& os, const Initializer& init) {
    return os << init.ToString();
  }

 private:
  enum class Kind {
    kConstant,
    kUniform,
    kNormal,
    kKaimingUniform,
    kKaimingNormal,
    kXavierUniform,
    kXavierNormal,
    kOrthogonal,
  };

  Initializer(Kind kind, double a, double b, bool fan_out_only)
      : kind_(kind), a_(a), b_(b), fan_out_only_(fan_out_only) {}

  // Aborts naming the missing fan or the bad shape.
  void CheckCanSample(const Shape& shape, std::optional<int64_t> fan_in,
                      std::optional<int64_t> fan_out) const;
  // The fan a Kaiming initializer divides by.
  int64_t KaimingFan(std::optional<int64_t> fan_in,
                     std::optional<int64_t> fan_out) const;

  Kind kind_;
  // Constant: a = value. Uniform: [a, b). Normal: mean a, std b. Fan-based
  // and Orthogonal: a = gain.
  double a_;
  double b_;
  bool fan_out_only_;
};

}  // namespace kindling

#endif  // KINDLING_MODULE_INITIALIZER_H_
