// SaveModule() / LoadModule(): a module's parameters to and from a
// safetensors file, keyed by their dotted paths (PyTorch's state_dict keys).
//
//   kindling::nn::Mlp model = kindling::nn::MlpConfig{...}.Init();  // lazy
//   absl::StatusOr<kindling::LoadReport> report =
//       kindling::LoadModule(model, "mlp.safetensors");
//   ...
//   absl::Status saved = kindling::SaveModule(model, "mlp.safetensors",
//                                             {.precision = Precision::kF16});
//
// Loading
//   * never runs a lazy parameter's init function and never allocates an
//     initial tensor: each parameter takes the file's value through
//     Param::load(), and a parameter the file lacks (with allow_partial)
//     stays exactly as it was, lazy or not;
//   * on the CPU, a tensor whose dtype matches the file's and whose bytes are
//     aligned *borrows* the mapped file (no copy, not counted in
//     MemoryStats). The mapping is private and writable, so an in-place
//     write (through any handle, e.g. `Tensor<2> w = *param; w.sub_(g);` under
//     a NoGradGuard) updates the parameter exactly as for an initialized one;
//     the kernel copies only the touched pages, and the file is never modified.
//     Others convert straight from the mapping. So no second copy of the model
//     ever exists;
//   * restores each parameter's ParamId from the file's metadata, so
//     optimizer state keyed by id stays attached;
//   * is all-or-nothing: every key, rank, shape and dtype is checked before
//     any tensor is made, and on any problem the module is unchanged and the
//     error lists every problem with its key.
//   The module's dtype is that of the initialized value, or the kind's
//   default (f32 for Float) for a lazy parameter.
//
// Saving writes to a temporary file beside the target, fsyncs and renames it
// over the target, so a crash or kill never leaves a torn checkpoint. Tensors
// are written one at a time; the extra memory is one tensor at most (when it
// must be made contiguous or moved off a device) plus a 1 MiB conversion
// buffer. Reading a lazy parameter's value to save it initializes it, as
// IntoRecord() does.
//
// Parameters and buffers (Buffer<T>) are both saved and loaded; their value
// type must be a kindling::Tensor.
#ifndef KINDLING_IO_MODULE_FILE_H_
#define KINDLING_IO_MODULE_FILE_H_

#include <string>
#include <string_view>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kindling/core/status_macros.h"
#include "kindling/io/module_io.h"
#include "kindling/io/options.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"
#include "kindling/tensor/tensor.h"

namespace kindling {

// SaveModule() writes every parameter and buffer of `module` to `path`.
template <Module M>
[[nodiscard]] absl::Status SaveModule(const M& module, const std::string& path,
                                      const SaveOptions& options = {});

// LoadModule() loads `path` into `module` and returns what it did. On error
// `module` is unchanged.
template <Module M>
[[nodiscard]] absl::StatusOr<LoadReport> LoadModule(
    M& module, const std::string& path, const LoadOptions& options = {});

// --- Implementation details follow -------------------------------------------

namespace module_file_internal {

template <class T>
struct IsTensor : std::false_type {};
template <int D, TensorKind K>
struct IsTensor<Tensor<D, K>> : std::true_type {};

}  // namespace module_file_internal

template <Module M>
absl::Status SaveModule(const M& module, const std::string& path,
                        const SaveOptions& options) {
  io::ModuleSaver saver(options);
  ForEachOwnedLeaf(module, [&](std::string_view leaf_path,
                               std::string_view owner, const auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    using T = typename module_internal::LeafValue<Leaf>::type;
    static_assert(module_file_internal::IsTensor<T>::value,
                  "SaveModule: parameters must hold kindling::Tensor");
    if constexpr (module_internal::ParamField<Leaf>) {
      saver.Add(leaf_path, owner, leaf.value_for_save().base(), leaf.id());
    } else {
      saver.Add(leaf_path, owner, leaf.value().base(), leaf.id());
    }
  });
  return saver.Write(path, ModuleTraits<M>::kTypeName);
}

template <Module M>
absl::StatusOr<LoadReport> LoadModule(M& module, const std::string& path,
                                      const LoadOptions& options) {
  absl::StatusOr<io::ModuleLoader> opened =
      io::ModuleLoader::Open(path, options);
  if (!opened.ok()) return opened.status();
  io::ModuleLoader& loader = *opened;

  // Pass one: match and check every leaf; nothing is read or changed.
  M loaded = module;
  std::vector<int> plans;
  ForEachOwnedLeaf(loaded, [&](std::string_view leaf_path,
                               std::string_view owner, auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    using T = typename module_internal::LeafValue<Leaf>::type;
    static_assert(module_file_internal::IsTensor<T>::value,
                  "LoadModule: parameters must hold kindling::Tensor");
    DType dtype = T::Kind::kDefaultDType;
    if constexpr (module_internal::ParamField<Leaf>) {
      if (leaf.is_initialized()) dtype = leaf.val().dtype();
    } else {
      if (leaf.is_initialized()) dtype = leaf.value().dtype();
    }
    io::LeafQuery query;
    query.path = leaf_path;
    query.owner_type = owner;
    query.rank = T::kRank;
    query.dtype = dtype;
    query.device = leaf.lazy_device();
    query.shape = leaf.lazy_shape();
    plans.push_back(loader.Plan(query));
  });
  KINDLING_RETURN_IF_ERROR(loader.Finish(ModuleTraits<M>::kTypeName));

  // Pass two: read the planned tensors into the copy.
  absl::Status failure;
  size_t next = 0;
  ForEachOwnedLeaf(loaded, [&](std::string_view, std::string_view, auto& leaf) {
    const int plan = plans[next++];
    if (plan < 0 || !failure.ok()) return;
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    using T = typename module_internal::LeafValue<Leaf>::type;
    absl::StatusOr<TensorBase> tensor = loader.Materialize(plan);
    if (!tensor.ok()) {
      failure = tensor.status();
      return;
    }
    const ParamId id = loader.id(plan).value_or(leaf.id());
    if constexpr (module_internal::ParamField<Leaf>) {
      leaf = leaf.load(T(*std::move(tensor))).with_id(id);
    } else {
      leaf = leaf.with_value(T(*std::move(tensor)), id);
    }
  });
  if (!failure.ok()) return failure;
  module = std::move(loaded);
  return loader.TakeReport();
}

}  // namespace kindling

#endif  // KINDLING_IO_MODULE_FILE_H_
