// Kindling quickstart: lazy parameters and a generated module.
//
//   tools/bazel run //examples:quickstart
//
// Part 1 builds a few lazy parameters, copies them, and shows with the CPU
// memory accounting that no tensor memory exists until a value is read, that
// copies share one value, and that a frozen tied copy keeps the weights.
// Part 2 builds the README's Mlp (examples/mlp.h, whose module code the
// generator wrote into examples/mlp.kindling.h), prints it, runs it, saves it
// as safetensors and loads it into a fresh lazy copy.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "examples/mlp.kindling.h"
#include "kindling/core/param.h"
#include "kindling/module/initializer.h"
#include "kindling/module/module.h"
#include "kindling/record/checkpoint.h"
#include "kindling/tensor/memory_stats.h"
#include "kindling/tensor/tensor.h"

namespace {

using kindling::Device;
using kindling::GetMemoryStats;
using kindling::Initializer;
using kindling::Param;
using kindling::Tensor;

// The [0, 0] element, read through a 1 x 1 view (no copy of the matrix).
float Corner(const Tensor<2>& tensor) {
  return tensor.narrow(0, 0, 1).narrow(1, 0, 1).to_data<float>()[0];
}

std::string Live() {
  const kindling::MemoryStats stats = GetMemoryStats(Device::Cpu());
  return absl::StrFormat(
      "%.1f MiB of tensor memory live, %d allocations so far",
      stats.bytes_live / 1048576.0, stats.allocation_count);
}

void Step(const char* what) { std::printf("\n%s\n", what); }

}  // namespace

int main() {
  kindling::SetInitSeed(2024);
  std::printf("Kindling quickstart: lazy parameters\n");
  std::printf("start: %s\n", Live().c_str());

  Step("1. Create a 4096 x 4096 weight (64 MiB of f32) with Kaiming init.");
  Param<Tensor<2>> weight = Initializer::KaimingUniform(1.0).Init<2>(
      {4096, 4096}, Device::Cpu(), /*fan_in=*/4096, /*fan_out=*/4096);
  std::printf("   shape %s on %s, initialized: %s\n",
              weight.lazy_shape().ToString().c_str(),
              weight.lazy_device().ToString().c_str(),
              weight.is_initialized() ? "yes" : "no");
  std::printf("   %s\n", Live().c_str());

  Step("2. Copy it 100 times (what cloning a model does).");
  std::vector<Param<Tensor<2>>> copies(100, weight);
  std::printf("   100 copies, still nothing allocated: %s\n", Live().c_str());

  Step("3. Read one copy: the init function runs once, for all copies.");
  std::printf("   copies[42][0][0] = %+.6f; original[0][0] = %+.6f\n",
              Corner(*copies[42]), Corner(*weight));
  std::printf("   original initialized too: %s (they share one value)\n",
              weight.is_initialized() ? "yes" : "no");
  std::printf("   %s\n", Live().c_str());

  Step("4. Freeze a tied copy: it stays tied (same storage, no new init).");
  Param<Tensor<2>> frozen = weight.set_require_grad(false);
  std::printf("   frozen requires grad: %s; shares storage with original: %s\n",
              frozen->is_require_grad() ? "yes" : "no",
              frozen->shares_storage_with(*weight) ? "yes" : "no");

  Step("5. A fresh lazy param, loaded from existing data, never runs init.");
  Param<Tensor<2>> fresh =
      Initializer::KaimingUniform(1.0).Init<2>({2, 2}, Device::Cpu(), 2, 2);
  Param<Tensor<2>> loaded =
      fresh.load(Tensor<2>::FromData<float>({1, 2, 3, 4}, {2, 2}));
  const std::vector<float> values = loaded->to_data<float>();
  std::printf(
      "   loaded [[%g, %g], [%g, %g]]; the fresh param is still lazy: %s\n",
      values[0], values[1], values[2], values[3],
      fresh.is_initialized() ? "no" : "yes");

  Step("6. A whole model: examples::Mlp, built lazily from its config.");
  const kindling::MemoryStats before = GetMemoryStats(Device::Cpu());
  examples::Mlp mlp = examples::MlpConfig{}.Init();
  std::printf("   %lld parameters; tensor bytes allocated by Init(): %lld\n",
              static_cast<long long>(kindling::NumParams(mlp)),
              static_cast<long long>(GetMemoryStats(Device::Cpu()).bytes_live -
                                     before.bytes_live));
  std::printf("%s", kindling::ModuleToString(mlp).c_str());

  Step("7. Run it on a batch of 4: the first forward pass initializes it.");
  kindling::Generator generator(7);
  const Tensor<2> images = Tensor<2>::RandomNormal({4, 784}, generator);
  const Tensor<2, kindling::Int> classes = mlp.Forward(images).argmax(1);
  const std::vector<int64_t> predicted = classes.to_data<int64_t>();
  std::printf("   predicted classes: %lld %lld %lld %lld\n",
              static_cast<long long>(predicted[0]),
              static_cast<long long>(predicted[1]),
              static_cast<long long>(predicted[2]),
              static_cast<long long>(predicted[3]));

  Step("8. Save it, then load it into a fresh lazy Mlp: no init runs.");
  const char* test_dir = std::getenv("TEST_TMPDIR");  // set under bazel test
  const std::string path = std::string(test_dir ? test_dir : "/tmp") +
                           "/kindling_quickstart.safetensors";
  if (absl::Status saved = kindling::SaveModule(mlp, path); !saved.ok()) {
    std::fprintf(stderr, "save failed: %s\n", saved.ToString().c_str());
    return 1;
  }
  examples::Mlp fresh_mlp = examples::MlpConfig{}.Init();
  absl::StatusOr<kindling::LoadReport> report =
      kindling::LoadModule(fresh_mlp, path);
  if (!report.ok()) {
    std::fprintf(stderr, "load failed: %s\n",
                 report.status().ToString().c_str());
    return 1;
  }
  std::printf(
      "   %s: %zu tensors loaded (%lld borrowed from the file's pages)\n",
      path.c_str(), report->applied.size(),
      static_cast<long long>(report->borrowed));
  const std::vector<int64_t> reloaded =
      fresh_mlp.Forward(images).argmax(1).to_data<int64_t>();
  std::printf("   the loaded model predicts the same classes: %s\n",
              reloaded == predicted ? "yes" : "NO");

  std::printf("\nend: %s\n", Live().c_str());
  return reloaded == predicted ? 0 : 1;
}
