// Options and reports for SaveModule() / LoadModule() (module_file.h).
//
//   kindling::LoadOptions options;
//   options.allow_partial = true;                    // keep what is missing
//   options.key_remap = {{R"(^model\.(.*))", "$1"}}; // drop a prefix
//   options.pytorch = kindling::PyTorchAdapter{};    // torch.nn layouts
//   absl::StatusOr<kindling::LoadReport> report =
//       kindling::LoadModule(model, "model.safetensors", options);
#ifndef KINDLING_IO_OPTIONS_H_
#define KINDLING_IO_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kindling {

// Precision: how floating-point parameters are stored on save. Integer and
// bool tensors are always stored as they are. Loading converts whatever the
// file holds to the module's dtype.
enum class Precision {
  kF32,   // full precision (Burn's FullPrecisionSettings)
  kF16,   // IEEE half (HalfPrecisionSettings)
  kBF16,  // bfloat16
};

// PrecisionName() is "f32", "f16" or "bf16" (as stored in the metadata).
constexpr std::string_view PrecisionName(Precision precision) {
  switch (precision) {
    case Precision::kF32:
      return "f32";
    case Precision::kF16:
      return "f16";
    case Precision::kBF16:
      return "bf16";
  }
  return "f32";
}

// KeyRemapRule: an ECMAScript regular expression and its replacement, applied
// with std::regex_replace to every file key (so "$1" is the first group).
// Rules apply in order, each to the previous one's result. A key that ends up
// empty is dropped ("skipped" in the report).
struct KeyRemapRule {
  std::string pattern;
  std::string replacement;
};

// PyTorchAdapter: translate between Kindling's layer layouts and torch.nn's,
// by the module type (ModuleTraits<M>::kTypeName) that owns a parameter. A
// template listed without arguments ("kindling::nn::BatchNorm") stands for
// every instantiation ("kindling::nn::BatchNorm<4>").
//   * linear_types: the rank-2 `weight` is [in, out] here and [out, in] in
//     PyTorch; it is transposed on load and on save.
//   * norm_types: `gamma`/`beta` are PyTorch's `weight`/`bias`. On load the
//     Kindling name is tried first, then the PyTorch one; on save the
//     PyTorch name is written.
struct PyTorchAdapter {
  std::vector<std::string> linear_types = {"kindling::nn::Linear"};
  std::vector<std::string> norm_types = {"kindling::nn::LayerNorm",
                                         "kindling::nn::BatchNorm"};
};

// LoadOptions: how LoadModule() matches file keys to parameters.
struct LoadOptions {
  // A file key that no parameter uses is an error (all of them listed). With
  // strict = false they are reported as `unused` instead.
  bool strict = true;
  // A parameter with no key in the file is an error (all listed) unless
  // allow_partial: then it keeps its current value (a lazy one stays lazy)
  // and is reported as `missing`.
  bool allow_partial = false;
  // A prefix the file's keys carry and the module's paths do not (Hugging
  // Face's "bert.", sentence-transformers' "0.auto_model."): removed from
  // every key that starts with it, before key_remap. Keys without it stay
  // as they are (a checkpoint's task heads, e.g. "cls.*", then count as
  // unexpected unless strict is false).
  std::string strip_prefix;
  // Rewrites file keys into module paths before matching.
  std::vector<KeyRemapRule> key_remap;
  // Reads torch.nn layouts and names (see PyTorchAdapter).
  std::optional<PyTorchAdapter> pytorch;
  // Takes each parameter's ParamId from the file's metadata when present, so
  // optimizer state keyed by id stays attached.
  bool restore_param_ids = true;
  // The host staging bound when loading into a module on a device other than
  // the CPU: each tensor goes from the mapped file to device memory in
  // chunks of at most this many bytes (converted on the way when the dtypes
  // differ), so the host memory the load allocates is one chunk, not the
  // model (see record/device_read.h). 8 MiB by default.
  int64_t device_staging_bytes = int64_t{8} << 20;
};

// LoadReport: what LoadModule() did.
struct LoadReport {
  // Module paths that took a value from the file.
  std::vector<std::string> applied;
  // Module paths the file had no key for (only with allow_partial).
  std::vector<std::string> missing;
  // File keys no parameter used (only with strict = false).
  std::vector<std::string> unused;
  // File keys dropped by a remap rule.
  std::vector<std::string> skipped;
  // Tensors that borrow the mapped file, and tensors that were converted
  // (dtype, alignment, device or layout differed).
  int64_t borrowed = 0;
  int64_t copied = 0;
  // The same in bytes (of the module's tensors); BorrowedFraction() is
  // borrowed_bytes over both.
  int64_t borrowed_bytes = 0;
  int64_t copied_bytes = 0;
  double BorrowedFraction() const {
    const int64_t total = borrowed_bytes + copied_bytes;
    return total == 0 ? 0.0 : static_cast<double>(borrowed_bytes) / total;
  }
  // The module type the file says it holds ("" for foreign files).
  std::string file_module_type;
};

// SaveOptions: how SaveModule() writes.
struct SaveOptions {
  Precision precision = Precision::kF32;
  // Writes torch.nn layouts and names, for PyTorch's load_state_dict.
  std::optional<PyTorchAdapter> pytorch;
  // Written before every key ("bert." for a Hugging Face layout); the
  // prefix LoadOptions::strip_prefix removes.
  std::string key_prefix;
  // Extra `__metadata__` entries (keys must not start with "kindling.").
  std::vector<std::pair<std::string, std::string>> metadata;
};

}  // namespace kindling

#endif  // KINDLING_IO_OPTIONS_H_
