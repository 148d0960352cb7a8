// Module walks: generated code vs a hand-written visitor, and lazy init of a
// 300M-parameter model.
//
//   tools/bazel run //benches:module_bench -- --benchmark_repetitions=5
//       --benchmark_report_aggregates_only=true
//
// BM_Visit / BM_Map walk a 100-layer model twice per iteration: once through
// the generated ModuleTraits (kindling::VisitParams / MapParams) and once with
// the loops a person would write, and report `vs_hand_written`, generated
// time over hand-written time (goal: 1.0 within noise). BM_LazyInit300M builds
// a 300M-parameter model and reports the tensor bytes and allocations it made
// (goal: 0) and its size.
#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "benches/bench_models.kindling.h"
#include "benchmark/benchmark.h"
#include "kindling/module/module.h"
#include "kindling/nn/linear.h"
#include "kindling/tensor/memory_stats.h"

namespace kindling::bench {
namespace {

constexpr int kLayers = 100;
constexpr int64_t kWidth = 64;

Deep MakeDeep(int layers, int64_t width) {
  Deep model;
  model.layers.reserve(layers);
  for (int i = 0; i < layers; ++i) {
    model.layers.push_back(nn::LinearConfig{width, width}.Init());
  }
  return model;
}

// The hand-written equivalent of VisitParams: paths built per layer.
template <class Visitor>
void HandWrittenVisit(const Deep& model, Visitor& visitor) {
  std::string path;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const nn::Linear& layer = model.layers[i];
    path.assign("layers.").append(std::to_string(i)).append(".weight");
    visitor(std::string_view(path), layer.weight);
    if (layer.bias.has_value()) {
      path.assign("layers.").append(std::to_string(i)).append(".bias");
      visitor(std::string_view(path), *layer.bias);
    }
  }
}

// The hand-written equivalent of MapParams.
template <class Mapper>
Deep HandWrittenMap(const Deep& model, Mapper& mapper) {
  Deep result = model;
  std::string path;
  for (size_t i = 0; i < result.layers.size(); ++i) {
    nn::Linear& layer = result.layers[i];
    path.assign("layers.").append(std::to_string(i)).append(".weight");
    layer.weight = mapper(std::string_view(path), std::as_const(layer.weight));
    if (layer.bias.has_value()) {
      path.assign("layers.").append(std::to_string(i)).append(".bias");
      *layer.bias = mapper(std::string_view(path), std::as_const(*layer.bias));
    }
  }
  return result;
}

// Touches what a real visitor reads: the path and the lazy shape.
struct SumVisitor {
  int64_t total = 0;
  template <class P>
  void operator()(std::string_view path, const P& param) {
    total += static_cast<int64_t>(path.size()) + param.lazy_shape()[0];
  }
};

// Keeps each param as is but through a real copy (what a mapper returns).
struct CopyMapper {
  template <class P>
  P operator()(std::string_view, const P& param) {
    return param.with_id(param.id());
  }
};

// Runs `hand_written` and `generated` alternately, timing each, so both see
// the same machine state; reports each one's time per walk and their ratio.
template <class HandWritten, class Generated>
void CompareWalks(benchmark::State& state, HandWritten hand_written,
                  Generated generated) {
  using Clock = std::chrono::steady_clock;
  Clock::duration hand_written_total{};
  Clock::duration generated_total{};
  for (auto _ : state) {
    const Clock::time_point start = Clock::now();
    hand_written();
    const Clock::time_point middle = Clock::now();
    generated();
    generated_total += Clock::now() - middle;
    hand_written_total += middle - start;
  }
  const double iterations = static_cast<double>(state.iterations());
  const double hand_written_ns =
      std::chrono::duration<double, std::nano>(hand_written_total).count() /
      iterations;
  const double generated_ns =
      std::chrono::duration<double, std::nano>(generated_total).count() /
      iterations;
  state.counters["hand_written_ns"] = hand_written_ns;
  state.counters["generated_ns"] = generated_ns;
  state.counters["vs_hand_written"] = generated_ns / hand_written_ns;
}

// Visit every parameter of a 100-layer model.
void BM_Visit(benchmark::State& state) {
  const Deep model = MakeDeep(kLayers, kWidth);
  CompareWalks(
      state,
      [&] {
        SumVisitor visitor;
        HandWrittenVisit(model, visitor);
        benchmark::DoNotOptimize(visitor.total);
      },
      [&] {
        SumVisitor visitor;
        VisitParams(model, visitor);
        benchmark::DoNotOptimize(visitor.total);
      });
}
BENCHMARK(BM_Visit);

// Map every parameter of a 100-layer model into a new model.
void BM_Map(benchmark::State& state) {
  const Deep model = MakeDeep(kLayers, kWidth);
  CompareWalks(
      state,
      [&] {
        CopyMapper mapper;
        Deep mapped = HandWrittenMap(model, mapper);
        benchmark::DoNotOptimize(mapped.layers.data());
      },
      [&] {
        Deep mapped = MapParams(model, CopyMapper{});
        benchmark::DoNotOptimize(mapped.layers.data());
      });
}
BENCHMARK(BM_Map);

// 100 Linear layers of 1732 x 1732 (+ bias): 300.1M parameters, 1.2 GB of f32
// if anything were allocated.
void BM_LazyInit300M(benchmark::State& state) {
  int64_t bytes = 0;
  int64_t allocations = 0;
  int64_t params = 0;
  for (auto _ : state) {
    const MemoryStats before = GetMemoryStats(Device::Cpu());
    Deep model = MakeDeep(100, 1732);
    const MemoryStats after = GetMemoryStats(Device::Cpu());
    bytes = after.live_bytes - before.live_bytes;
    allocations = after.allocation_count - before.allocation_count;
    params = NumParams(model);
    benchmark::DoNotOptimize(model.layers.data());
  }
  state.counters["params"] = static_cast<double>(params);
  state.counters["tensor_bytes_allocated"] = static_cast<double>(bytes);
  state.counters["tensor_allocations"] = static_cast<double>(allocations);
}
BENCHMARK(BM_LazyInit300M);

}  // namespace
}  // namespace kindling::bench

BENCHMARK_MAIN();
