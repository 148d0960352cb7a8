// The non-template engine behind SaveModule() and LoadModule()
// (module_file.h). The templates walk a module and describe each parameter as
// a LeafQuery or a tensor; everything that does not depend on the module's
// C++ type (key matching, remapping, the PyTorch adapter, validation,
// conversion, writing) lives here, compiled once.
//
// Loading is two passes over a copy of the module. Pass one calls Plan() for
// every leaf: it matches keys and checks rank, shape and dtype without
// reading a tensor byte. Finish() then turns every recorded problem into one
// error. Only if there is none does pass two call Materialize() per planned
// leaf and assign the results. So a failed load has touched nothing.
#ifndef KINDLING_IO_MODULE_IO_H_
#define KINDLING_IO_MODULE_IO_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "kindling/core/param_id.h"
#include "kindling/io/options.h"
#include "kindling/io/safetensors.h"
#include "kindling/io/tensor_file.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/dtype.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor_base.h"

namespace kindling::io {

// kFormatVersion is the Kindling metadata version this code writes and the
// newest it reads.
inline constexpr int kFormatVersion = 1;

// Metadata keys Kindling writes.
inline constexpr std::string_view kFormatVersionKey = "kindling.format_version";
inline constexpr std::string_view kModuleTypeKey = "kindling.module";
inline constexpr std::string_view kPrecisionKey = "kindling.precision";
inline constexpr std::string_view kLayoutKey = "kindling.layout";
inline constexpr std::string_view kParamIdKeyPrefix = "kindling.param_id.";

// LeafQuery: one parameter or buffer of the module being loaded.
struct LeafQuery {
  std::string_view path;        // dotted module path
  std::string_view owner_type;  // kTypeName of the module holding it
  int rank = 0;                 // the Tensor<D> rank
  DType dtype = DType::kF32;    // the dtype the module wants
  Device device;                // where it lives (or will)
  Shape shape;                  // its (lazy) shape
};

class ModuleLoader {
 public:
  // Open() maps and validates the file (nothing is read from the module).
  [[nodiscard]] static absl::StatusOr<ModuleLoader> Open(
      const std::string& path, const LoadOptions& options);

  // Plan() matches one leaf. Returns its plan index, or -1 when the leaf
  // keeps its value (missing from the file, or a problem was recorded).
  int Plan(const LeafQuery& leaf);

  // Finish() reports every problem recorded by Plan() and every unused key,
  // as one InvalidArgument naming the file and each key.
  [[nodiscard]] absl::Status Finish(std::string_view module_type);

  // Materialize() reads planned tensor `plan` (borrowing when it can; onto
  // a device through a bounded staging buffer, device_read.h).
  [[nodiscard]] absl::StatusOr<TensorBase> Materialize(int plan);

  // id() is the ParamId the file recorded for plan `plan`, if any.
  std::optional<ParamId> id(int plan) const { return plans_[plan].id; }

  LoadReport TakeReport() { return std::move(report_); }

 private:
  struct Planned {
    const TensorInfo* info;
    DType dtype;
    Device device;
    bool transpose;
    std::optional<ParamId> id;
  };

  // Count() adds a materialized tensor to the report's borrowed or copied
  // counters.
  void Count(const TensorBase& tensor, bool borrowed);

  // MaterializeOnDevice() is Materialize() for a plan bound for a device
  // other than the CPU: straight from the mapping into device memory.
  [[nodiscard]] absl::StatusOr<TensorBase> MaterializeOnDevice(
      const Planned& planned);

  ModuleLoader(std::string path,
               std::vector<std::shared_ptr<const TensorFile>> files,
               const LoadOptions& options)
      : path_(std::move(path)), files_(std::move(files)), options_(options) {}

  // FileOf() is the file (shard) that holds `info`.
  const std::shared_ptr<const TensorFile>& FileOf(const TensorInfo* info) const;

  // MissingList() / UnusedList(): the keys for the error message, each with
  // the nearest key of the other list ("did you mean").
  std::string MissingList(const std::vector<std::string>& unused_keys) const;
  std::string UnusedList(const std::vector<std::string>& unused_keys) const;

  // The path LoadModule() was given (a file, or a sharded checkpoint's
  // index), and the files it names: one, or every shard.
  std::string path_;
  std::vector<std::shared_ptr<const TensorFile>> files_;
  absl::flat_hash_map<const TensorInfo*, size_t> file_of_;
  LoadOptions options_;
  // Module-space key (after remapping) -> file tensor.
  absl::flat_hash_map<std::string, const TensorInfo*> by_key_;
  absl::flat_hash_map<const TensorInfo*, bool> used_;
  std::vector<Planned> plans_;
  std::vector<std::string> errors_;
  LoadReport report_;
  // For each report_.missing entry, the key the file should have held (its
  // convention: the PyTorch name of a norm parameter under the adapter).
  std::vector<std::string> missing_file_keys_;
};

class ModuleSaver {
 public:
  explicit ModuleSaver(const SaveOptions& options) : options_(options) {}

  // Add() records one leaf. `value` is a handle: nothing is copied yet.
  void Add(std::string_view path, std::string_view owner_type,
           const TensorBase& value, ParamId id);

  // Write() writes every added tensor to `path` atomically (atomic_file.h),
  // one tensor at a time.
  [[nodiscard]] absl::Status Write(const std::string& path,
                                   std::string_view module_type);

 private:
  struct Entry {
    TensorSpec spec;
    TensorBase value;
    ParamId id = ParamId::FromValue(0);
  };
  SaveOptions options_;
  std::vector<Entry> entries_;
};

}  // namespace kindling::io

#endif  // KINDLING_IO_MODULE_IO_H_
