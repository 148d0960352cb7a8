// Kindling's hand-written vector math (backend/cpu/vector_math.h) against
// SLEEF, the vectorized math library PyTorch uses, on the same inputs:
// what keeps vector_math.h hand-written (issue: library first).
//
// SLEEF comes from Debian's libsleef3 (the runtime Debian's python3-torch
// depends on), opened with dlopen: only its shared library ships (no
// inlinable headers), so every SLEEF vector is a call, as it would be inside
// Kindling. Contenders per function, each where this CPU runs it:
//   kindling8 / kindling16   Exp8 / Exp16 etc. (the 16-lane forms exist for
//                            exp, log, sigmoid and GELU; AVX-512 only)
//   sleef8_u10 / _u35        Sleef_<f>f8_u10avx2 / _u35avx2 (1.0 / 3.5 ulp)
//   sleef16_u10 / _u35       the avx512f entry points
// sigmoid is 1 / (1 + e^-x) around SLEEF's exp; GELU x/2 erfc(-x / sqrt 2)
// around SLEEF's erfc (the form without cancellation for x < 0).
//
// Counters per contender: <contender>_ns (median ns per element over
// alternating blocks of 16384 floats, in cache: compute-bound) and
// <contender>_ulp (the worst error over every 4099th float where the result
// is a normal float, against the double result rounded to float), and
// sleef_vs_kindling = the time of the fastest SLEEF contender at least as
// accurate as Kindling's (no larger worst error) over the fastest Kindling
// one's (< 1: SLEEF is faster; inf: none is as accurate). The benchmark is
// skipped with a message when libsleef.so.3 is absent.
//
//   taskset -c 1 bazel-bin/benches/vector_math_bench
#include <dlfcn.h>
#include <immintrin.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "benches/median.h"
#include "benchmark/benchmark.h"
#include "kindling/backend/cpu/vector_math.h"

namespace kindling {
namespace {

using bench::Median;

using cpu::HasAvx512;
using Fn8 = __m256 (*)(__m256);
using Fn16 = __m512 (*)(__m512);

constexpr int64_t kElements = 16384;
constexpr int kRounds = 15;

void* Sleef() {
  static void* library = dlopen("libsleef.so.3", RTLD_NOW | RTLD_LOCAL);
  return library;
}

template <class Fn>
Fn SleefFunction(const std::string& name) {
  return Sleef() == nullptr
             ? nullptr
             : reinterpret_cast<Fn>(dlsym(Sleef(), name.c_str()));
}

// A contender: an eight- or sixteen-lane function over a float array.
struct Contender {
  std::string name;
  void (*apply)(const void* function, const float* in, float* out, int64_t n);
  const void* function;  // the SLEEF entry point, or null for Kindling's
  bool sleef = false;
};

void Apply8(Fn8 f, const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    _mm256_storeu_ps(out + i, f(_mm256_loadu_ps(in + i)));
  }
}

KINDLING_AVX512_BEGIN
KINDLING_AVX512 void Apply16(Fn16 f, const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_storeu_ps(out + i, f(_mm512_loadu_ps(in + i)));
  }
}

// Kindling's functions, inlined into their loops as the kernels have them.
template <__m256 (*F)(__m256)>
void Kindling8(const void*, const float* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    _mm256_storeu_ps(out + i, F(_mm256_loadu_ps(in + i)));
  }
}

template <__m512 (*F)(__m512)>
KINDLING_AVX512 void Kindling16(const void*, const float* in, float* out,
                                int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    _mm512_storeu_ps(out + i, F(_mm512_loadu_ps(in + i)));
  }
}

KINDLING_AVX512 __m512 Exp16(__m512 x) { return cpu::Exp16(x); }
KINDLING_AVX512 __m512 Log16(__m512 x) { return cpu::Log16(x); }
KINDLING_AVX512 __m512 Sigmoid16(__m512 x) { return cpu::Sigmoid16(x); }
KINDLING_AVX512 __m512 Tanh16(__m512 x) { return cpu::Tanh16(x); }
KINDLING_AVX512 __m512 Gelu16(__m512 x) { return cpu::Gelu16(x); }

// SLEEF's entry points through their pointers; sigmoid and GELU built
// around its exp and erfc (a thread-local pointer keeps the loops plain).
thread_local Fn8 exp8_sleef, erfc8_sleef;
thread_local Fn16 exp16_sleef, erfc16_sleef;

void Sleef8(const void* f, const float* in, float* out, int64_t n) {
  Apply8(reinterpret_cast<Fn8>(const_cast<void*>(f)), in, out, n);
}
KINDLING_AVX512 void Sleef16(const void* f, const float* in, float* out,
                             int64_t n) {
  Apply16(reinterpret_cast<Fn16>(const_cast<void*>(f)), in, out, n);
}

__m256 SleefSigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.0f);
  return _mm256_div_ps(
      one,
      _mm256_add_ps(one, exp8_sleef(_mm256_sub_ps(_mm256_setzero_ps(), x))));
}
KINDLING_AVX512 __m512 SleefSigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.0f);
  return _mm512_div_ps(
      one,
      _mm512_add_ps(one, exp16_sleef(_mm512_sub_ps(_mm512_setzero_ps(), x))));
}
__m256 SleefGelu8(__m256 x) {
  const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(-0.70710678118654752f));
  return _mm256_mul_ps(_mm256_mul_ps(x, _mm256_set1_ps(0.5f)), erfc8_sleef(t));
}
KINDLING_AVX512 __m512 SleefGelu16(__m512 x) {
  const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(-0.70710678118654752f));
  return _mm512_mul_ps(_mm512_mul_ps(x, _mm512_set1_ps(0.5f)), erfc16_sleef(t));
}
KINDLING_AVX512_END

// One function's contenders, its double reference and its inputs' range.
struct MathFunction {
  std::string name;
  double (*reference)(double);
  std::vector<Contender> contenders;
  bool log_uniform_inputs;  // [1e-3, 1e3] spread over the exponents
};

void AddSleef(std::vector<Contender>& contenders, const std::string& label,
              const std::string& symbol, bool sixteen) {
  void* f = sixteen ? reinterpret_cast<void*>(SleefFunction<Fn16>(symbol))
                    : reinterpret_cast<void*>(SleefFunction<Fn8>(symbol));
  if (f == nullptr || (sixteen && !HasAvx512())) return;
  contenders.push_back({label, sixteen ? &Sleef16 : &Sleef8, f, true});
}

std::vector<MathFunction> Functions() {
  exp8_sleef = SleefFunction<Fn8>("Sleef_expf8_u10avx2");
  erfc8_sleef = SleefFunction<Fn8>("Sleef_erfcf8_u15avx2");
  exp16_sleef = SleefFunction<Fn16>("Sleef_expf16_u10avx512f");
  erfc16_sleef = SleefFunction<Fn16>("Sleef_erfcf16_u15avx512f");
  const bool avx512 = HasAvx512();
  std::vector<MathFunction> functions;
  auto add = [&](std::string name, double (*reference)(double),
                 std::vector<Contender> kindling, const std::string& sleef,
                 bool has_u35, bool log_uniform) {
    MathFunction f{name, reference, std::move(kindling), log_uniform};
    AddSleef(f.contenders, "sleef8_u10", "Sleef_" + sleef + "f8_u10avx2",
             false);
    AddSleef(f.contenders, "sleef16_u10", "Sleef_" + sleef + "f16_u10avx512f",
             true);
    if (has_u35) {
      AddSleef(f.contenders, "sleef8_u35", "Sleef_" + sleef + "f8_u35avx2",
               false);
      AddSleef(f.contenders, "sleef16_u35", "Sleef_" + sleef + "f16_u35avx512f",
               true);
    }
    functions.push_back(std::move(f));
  };
  std::vector<Contender> exp = {{"kindling8", &Kindling8<cpu::Exp8>, nullptr}};
  if (avx512) exp.push_back({"kindling16", &Kindling16<Exp16>, nullptr});
  add(
      "exp", [](double x) { return std::exp(x); }, exp, "exp", false, false);
  std::vector<Contender> log = {{"kindling8", &Kindling8<cpu::Log8>, nullptr}};
  if (avx512) log.push_back({"kindling16", &Kindling16<Log16>, nullptr});
  add(
      "log", [](double x) { return std::log(x); }, log, "log", true, true);
  std::vector<Contender> tanh = {
      {"kindling8", &Kindling8<cpu::Tanh8>, nullptr}};
  if (avx512) tanh.push_back({"kindling16", &Kindling16<Tanh16>, nullptr});
  add(
      "tanh", [](double x) { return std::tanh(x); }, tanh, "tanh", true, false);
  // sigmoid and GELU: SLEEF's exp / erfc inside Kindling's formula.
  MathFunction sigmoid{"sigmoid",
                       [](double x) { return 1 / (1 + std::exp(-x)); },
                       {{"kindling8", &Kindling8<cpu::Sigmoid8>, nullptr}},
                       false};
  MathFunction gelu{
      "gelu",
      [](double x) { return x / 2 * std::erfc(-x / std::sqrt(2.0)); },
      {{"kindling8", &Kindling8<cpu::Gelu8>, nullptr}},
      false};
  if (avx512) {
    sigmoid.contenders.push_back(
        {"kindling16", &Kindling16<Sigmoid16>, nullptr});
    gelu.contenders.push_back({"kindling16", &Kindling16<Gelu16>, nullptr});
  }
  if (exp8_sleef != nullptr) {
    sigmoid.contenders.push_back(
        {"sleef8_u10", &Sleef8, reinterpret_cast<void*>(&SleefSigmoid8), true});
    gelu.contenders.push_back(
        {"sleef8_u15", &Sleef8, reinterpret_cast<void*>(&SleefGelu8), true});
  }
  if (exp16_sleef != nullptr && avx512) {
    sigmoid.contenders.push_back({"sleef16_u10", &Sleef16,
                                  reinterpret_cast<void*>(&SleefSigmoid16),
                                  true});
    gelu.contenders.push_back(
        {"sleef16_u15", &Sleef16, reinterpret_cast<void*>(&SleefGelu16), true});
  }
  functions.push_back(std::move(sigmoid));
  functions.push_back(std::move(gelu));
  return functions;
}

int64_t OrderedBits(float x) {
  const int32_t bits = std::bit_cast<int32_t>(x);
  return bits < 0 ? int64_t{INT32_MIN} - bits : bits;
}

// WorstUlp() is the contender's largest error over every 4099th float whose
// reference result is a normal float (in the function's domain).
int64_t WorstUlp(const MathFunction& f, const Contender& c) {
  std::vector<float> in, out;
  for (uint64_t bits = 0; bits <= UINT32_MAX; bits += 4099) {
    const float x = std::bit_cast<float>(static_cast<uint32_t>(bits));
    const double y = f.reference(x);
    if (std::isnormal(static_cast<float>(y))) in.push_back(x);
  }
  while (in.size() % 16 != 0) in.push_back(in.back());
  out.resize(in.size());
  c.apply(c.function, in.data(), out.data(), in.size());
  int64_t worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    const float expected = static_cast<float>(f.reference(in[i]));
    worst =
        std::max(worst, std::abs(OrderedBits(expected) - OrderedBits(out[i])));
  }
  return worst;
}

std::vector<float> Inputs(bool log_uniform) {
  std::mt19937 random(3);
  std::uniform_real_distribution<float> uniform(-10, 10);
  std::uniform_real_distribution<float> exponent(-3 * std::log(10.0f),
                                                 3 * std::log(10.0f));
  std::vector<float> inputs(kElements);
  for (float& x : inputs)
    x = log_uniform ? std::exp(exponent(random)) : uniform(random);
  return inputs;
}

void BM_VectorMath(benchmark::State& state, const MathFunction* f) {
  if (Sleef() == nullptr) {
    state.SkipWithError("libsleef.so.3 not found (Debian's libsleef3)");
    return;
  }
  const std::vector<float> in = Inputs(f->log_uniform_inputs);
  std::vector<float> out(kElements);
  const int calls = 64;  // about 0.3-3 ms a block
  std::vector<std::vector<double>> ns(f->contenders.size());
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round) {
      for (size_t c = 0; c < f->contenders.size(); ++c) {
        const Contender& contender = f->contenders[c];
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < calls; ++i) {
          contender.apply(contender.function, in.data(), out.data(), kElements);
          benchmark::DoNotOptimize(out.data());
        }
        ns[c].push_back(std::chrono::duration<double, std::nano>(
                            std::chrono::steady_clock::now() - start)
                            .count() /
                        (calls * kElements));
      }
    }
  }
  std::vector<double> medians(f->contenders.size());
  std::vector<int64_t> ulps(f->contenders.size());
  double best_kindling = INFINITY;
  int64_t kindling_ulp = 0;
  for (size_t c = 0; c < f->contenders.size(); ++c) {
    const Contender& contender = f->contenders[c];
    medians[c] = Median(ns[c]);
    ulps[c] = WorstUlp(*f, contender);
    state.counters[contender.name + "_ns"] = medians[c];
    state.counters[contender.name + "_ulp"] = static_cast<double>(ulps[c]);
    if (!contender.sleef) {
      best_kindling = std::min(best_kindling, medians[c]);
      kindling_ulp = std::max(kindling_ulp, ulps[c]);
    }
  }
  // SLEEF only where it is at least as accurate as Kindling's functions.
  double best_sleef = INFINITY;
  for (size_t c = 0; c < f->contenders.size(); ++c) {
    if (f->contenders[c].sleef && ulps[c] <= kindling_ulp) {
      best_sleef = std::min(best_sleef, medians[c]);
    }
  }
  state.counters["sleef_vs_kindling"] = best_sleef / best_kindling;
}

const bool kRegistered = [] {
  static const std::vector<MathFunction>* functions =
      new std::vector<MathFunction>(Functions());
  for (const MathFunction& f : *functions) {
    benchmark::RegisterBenchmark(("BM_VectorMath/" + f.name).c_str(),
                                 BM_VectorMath, &f)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
}  // namespace kindling

BENCHMARK_MAIN();
