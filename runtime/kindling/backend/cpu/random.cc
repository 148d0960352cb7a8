#include "kindling/backend/cpu/random.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <string>
#include <type_traits>

#include "kindling/backend/cpu/element.h"
#include "kindling/backend/cpu/kernels.h"
#include "kindling/backend/cpu/parallel.h"
#include "kindling/core/check.h"
#include "kindling/tensor/box_muller.h"
#include "kindling/tensor/half.h"
#include "kindling/tensor/philox.h"

namespace kindling::cpu {
namespace {

// Blocks computed together, as vector lanes. 32 measured twice as fast as 8
// or 16 with gcc 12 and AVX2 (longer loops over the same rounds), and the
// 128 words of a batch stay in L1.
constexpr int64_t kBatchBlocks = 32;
constexpr int64_t kBatchWords = 4 * kBatchBlocks;

// kBlockGrain: the fewest blocks worth another thread. 8192 blocks are 32K
// f32 elements, tens of microseconds of Philox rounds, well above a fork and
// join; smaller fills (dropout of a [128, 256] activation) stay on the
// calling thread.
constexpr int64_t kBlockGrain = 8192;

// PhiloxKeys is the key of each of the ten rounds, computed once per fill.
struct PhiloxKeys {
  std::array<uint32_t, 10> k0;
  std::array<uint32_t, 10> k1;

  explicit PhiloxKeys(uint64_t seed) {
    PhiloxKey key = PhiloxKeyFromSeed(seed);
    for (int round = 0; round < 10; ++round) {
      k0[round] = key[0];
      k1[round] = key[1];
      key[0] += 0x9E3779B9u;
      key[1] += 0xBB67AE85u;
    }
  }
};

// PhiloxBatch() writes the words of blocks [first_block, first_block + 32):
// words[4 * j + lane] = Philox4x32_10(PhiloxCounter(first_block + j))[lane].
// It is Philox4x32_10() (philox.h) with the blocks as vector lanes.
void PhiloxBatch(const PhiloxKeys& keys, uint64_t first_block,
                 uint32_t* words) {
  alignas(64) uint32_t x0[kBatchBlocks], x1[kBatchBlocks], x2[kBatchBlocks],
      x3[kBatchBlocks];
  for (int64_t j = 0; j < kBatchBlocks; ++j) {
    const uint64_t counter = first_block + static_cast<uint64_t>(j);
    x0[j] = static_cast<uint32_t>(counter);
    x1[j] = static_cast<uint32_t>(counter >> 32);
    x2[j] = 0;
    x3[j] = 0;
  }
  for (int round = 0; round < 10; ++round) {
    const uint32_t k0 = keys.k0[round];
    const uint32_t k1 = keys.k1[round];
    for (int64_t j = 0; j < kBatchBlocks; ++j) {
      const uint64_t product0 = uint64_t{0xD2511F53u} * x0[j];
      const uint64_t product1 = uint64_t{0xCD9E8D57u} * x2[j];
      const uint32_t y0 = static_cast<uint32_t>(product1 >> 32) ^ x1[j] ^ k0;
      const uint32_t y2 = static_cast<uint32_t>(product0 >> 32) ^ x3[j] ^ k1;
      x1[j] = static_cast<uint32_t>(product1);
      x3[j] = static_cast<uint32_t>(product0);
      x0[j] = y0;
      x2[j] = y2;
    }
  }
  for (int64_t j = 0; j < kBatchBlocks; ++j) {
    words[4 * j + 0] = x0[j];
    words[4 * j + 1] = x1[j];
    words[4 * j + 2] = x2[j];
    words[4 * j + 3] = x3[j];
  }
}

// ForEachWordBatch() calls emit(words, first_element, count) for consecutive
// runs of the `numel` elements, `words` holding the batch's words starting
// at the word of element first_element. Threads split the blocks; each
// element's words depend only on its index.
template <class Emit>
void ForEachWordBatch(int64_t numel, int64_t elements_per_block, uint64_t seed,
                      uint64_t offset, const Emit& emit) {
  const int64_t blocks = (numel + elements_per_block - 1) / elements_per_block;
  const PhiloxKeys keys(seed);
  ParallelFor(blocks, kBlockGrain, [&](int64_t begin, int64_t end) {
    alignas(64) uint32_t words[kBatchWords];
    for (int64_t block = begin; block < end; block += kBatchBlocks) {
      PhiloxBatch(keys, offset + static_cast<uint64_t>(block), words);
      const int64_t first = block * elements_per_block;
      const int64_t last = std::min(
          std::min(end, block + kBatchBlocks) * elements_per_block, numel);
      emit(words, first, last - first);
    }
  });
}

// NextBelow() is the largest T below `value` (finite, T-representable).
template <class T>
T NextBelow(T value) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::nextafter(value, -std::numeric_limits<T>::infinity());
  } else {
    const uint16_t bits = value.bits;
    if ((bits & 0x7fff) == 0) return T::FromBits(0x8001);  // below +-0
    return T::FromBits((bits & 0x8000) ? bits + 1 : bits - 1);
  }
}

// Compute<T> is the type a T element is computed in: double for f64, float
// for f32 and the 16-bit floats.
template <class T>
using Compute = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
Compute<T> Widen(T value) {
  if constexpr (kIsHalfType<T>) {
    return value.ToFloat();
  } else {
    return value;
  }
}

// Uniform in [low, high) of T: low + u * (high - low) with the bounds rounded
// to T, the result clamped to the largest T below high, then rounded to T
// (clamping first keeps rounding from reaching high).
template <class T>
void FillUniform(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                 double low, double high) {
  using C = Compute<T>;
  const T low_t = Convert<T>(low);
  const T high_t = Convert<T>(high);
  const C low_c = Widen(low_t);
  const C range = Widen(high_t) - low_c;
  const C upper = Widen(high_t) > low_c ? Widen(NextBelow(high_t)) : low_c;
  constexpr bool kDouble = std::is_same_v<T, double>;
  ForEachWordBatch(numel, kDouble ? 2 : 4, seed, offset,
                   [&](const uint32_t* words, int64_t first, int64_t count) {
                     T* dst = out + first;
                     for (int64_t i = 0; i < count; ++i) {
                       C u;
                       if constexpr (kDouble) {
                         u = UniformDouble(words[2 * i], words[2 * i + 1]);
                       } else {
                         u = UniformFloat(words[i]);
                       }
                       const C value = std::min(low_c + u * range, upper);
                       dst[i] = Convert<T>(value);
                     }
                   });
}

// Normal by Box-Muller on pairs (philox.h gives the word layout). 16/32-bit
// outputs use BoxMullerFloat (box_muller.h), which vectorizes; f64 uses
// libm in double.
template <class T>
void FillNormal(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                double mean, double std) {
  using C = Compute<T>;
  const C mean_c = static_cast<C>(mean);
  const C std_c = static_cast<C>(std);
  if constexpr (std::is_same_v<T, double>) {
    ForEachWordBatch(
        numel, 2, seed, offset,
        [&](const uint32_t* words, int64_t first, int64_t count) {
          double* dst = out + first;
          for (int64_t pair = 0; 2 * pair < count; ++pair) {
            const uint32_t* w = words + 4 * pair;
            const double radius =
                std::sqrt(-2.0 * std::log(OpenUniformDouble(w[0], w[1])));
            const double angle =
                2 * std::numbers::pi * UniformDouble(w[2], w[3]);
            dst[2 * pair] = mean_c + std_c * (radius * std::cos(angle));
            if (2 * pair + 1 < count) {
              dst[2 * pair + 1] = mean_c + std_c * (radius * std::sin(angle));
            }
          }
        });
  } else {
    ForEachWordBatch(numel, 4, seed, offset,
                     [&](const uint32_t* words, int64_t first, int64_t count) {
                       // All pairs of the batch first (a vector loop), then the
                       // affine map and the rounding to T.
                       alignas(64) float normal[kBatchWords];
                       for (int64_t pair = 0; pair < kBatchWords / 2; ++pair) {
                         BoxMullerFloat(words[2 * pair], words[2 * pair + 1],
                                        normal[2 * pair], normal[2 * pair + 1]);
                       }
                       T* dst = out + first;
                       for (int64_t i = 0; i < count; ++i) {
                         dst[i] = Convert<T>(mean_c + std_c * normal[i]);
                       }
                     });
  }
}

// The dropout mask: `scale` where kept, 0 where dropped.
template <class T>
void FillBernoulli(T* out, int64_t numel, uint64_t seed, uint64_t offset,
                   double prob, double scale) {
  const uint32_t threshold = KeepThreshold(prob);
  const T kept = Convert<T>(scale);
  const T dropped = Convert<T>(0.0);
  ForEachWordBatch(numel, 4, seed, offset,
                   [&](const uint32_t* words, int64_t first, int64_t count) {
                     T* dst = out + first;
                     for (int64_t i = 0; i < count; ++i) {
                       dst[i] = (words[i] >> 8) >= threshold ? kept : dropped;
                     }
                   });
}

// out = in * mask, mask as FillBernoulli writes it, computed as the
// element-wise product would be (so inf * 0 is NaN, like x * mask).
template <class T>
void ApplyDropout(T* out, const T* in, int64_t numel, uint64_t seed,
                  uint64_t offset, double prob) {
  using C = Compute<T>;
  const uint32_t threshold = KeepThreshold(prob);
  const C kept = Widen(Convert<T>(1 / (1 - prob)));
  ForEachWordBatch(numel, 4, seed, offset,
                   [&](const uint32_t* words, int64_t first, int64_t count) {
                     T* dst = out + first;
                     const T* src = in + first;
                     for (int64_t i = 0; i < count; ++i) {
                       const C mask = (words[i] >> 8) >= threshold ? kept : 0;
                       dst[i] = Convert<T>(Widen(src[i]) * mask);
                     }
                   });
}

}  // namespace

void FillRandomKernel(const TensorBase& out, RandomDistribution distribution,
                      uint64_t seed, uint64_t offset, double a, double b) {
  KINDLING_CHECK(out.is_contiguous(),
                 "cpu fill_random: output %s not "
                 "contiguous",
                 out.shape().ToString());
  DispatchDType<kFloatingDTypes>(
      out.dtype(), "cpu fill_random", [&]<class T>() {
        T* data = out.data_as<T>();
        switch (distribution) {
          case RandomDistribution::kUniform:
            return FillUniform(data, out.numel(), seed, offset, a, b);
          case RandomDistribution::kNormal:
            return FillNormal(data, out.numel(), seed, offset, a, b);
          case RandomDistribution::kBernoulli:
            return FillBernoulli(data, out.numel(), seed, offset, a, b);
        }
      });
}

void DropoutKernel(const TensorBase& out, const TensorBase& in, double prob,
                   uint64_t seed, uint64_t offset) {
  KINDLING_CHECK(out.is_contiguous(), "cpu dropout: output %s not contiguous",
                 out.shape().ToString());
  // A strided input is gathered into `out` first; the mask is then applied
  // in place (each element reads its own position only).
  const bool gather = !in.is_contiguous();
  if (gather) CopyKernel(out, in);
  const TensorBase& source = gather ? out : in;
  DispatchDType<kFloatingDTypes>(out.dtype(), "cpu dropout", [&]<class T>() {
    ApplyDropout(out.data_as<T>(), source.data_as<T>(), out.numel(), seed,
                 offset, prob);
  });
}

}  // namespace kindling::cpu
