// BroadcastModule(): every rank starts from rank 0's parameters and buffers.
//
//   M model = MConfig{}.Init();   // lazy: nothing initialized yet
//   KINDLING_RETURN_IF_ERROR(
//       kindling::distributed::BroadcastModule(model, *comm));
//
// Rank 0 reads (so initializes) each leaf and sends it; every other rank
// receives into a fresh tensor and takes it as the leaf's value, so a lazy
// parameter is initialized once, on rank 0 only: the other ranks never run
// its init function. Before any value moves, the ranks agree that their
// models match (same leaf paths, shapes and, where known, dtypes); a rank
// whose model differs fails with an error naming the first differing leaf,
// and every other rank fails with an error naming that rank, so a mismatch is
// found before training starts, never as wrong gradients later.
//
// Values move through the communicator's memory (host memory for Gloo and
// MPI): a leaf on another device is staged there and back.
#ifndef KINDLING_DISTRIBUTED_MODULE_SYNC_H_
#define KINDLING_DISTRIBUTED_MODULE_SYNC_H_

#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "kindling/core/param.h"
#include "kindling/core/status_macros.h"
#include "kindling/distributed/communicator.h"
#include "kindling/module/buffer.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"
#include "kindling/tensor/tensor.h"

namespace kindling::distributed {

// LeafSignature: what every rank must agree on for one leaf.
struct LeafSignature {
  std::string path;
  Shape shape;
  DType dtype = DType::kF32;
  // dtype_known: false for a lazy leaf, whose dtype is decided by its init
  // function (rank 0's then rules).
  bool dtype_known = false;
};

// AgreeOnSignatures() checks `local` against rank 0's list on every rank
// and returns rank 0's (whose dtypes receivers allocate), or the mismatch
// error described above.
[[nodiscard]] absl::StatusOr<std::vector<LeafSignature>> AgreeOnSignatures(
    Communicator& comm, const std::vector<LeafSignature>& local);

// BroadcastLeafValue() sends `value` from rank 0 (other ranks: receives
// into a new tensor of `signature`) and returns it on `device`.
[[nodiscard]] absl::StatusOr<TensorBase> BroadcastLeafValue(
    Communicator& comm, const LeafSignature& signature, const TensorBase& value,
    const Device& device);

template <Module M>
[[nodiscard]] absl::Status BroadcastModule(M& model, Communicator& comm) {
  if (comm.world_size() == 1) return absl::OkStatus();
  std::vector<LeafSignature> local;
  ForEachLeaf(model, [&](std::string_view path, const auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    using T = typename module_internal::LeafValue<Leaf>::type;
    LeafSignature signature{.path = std::string(path),
                            .shape = Shape(leaf.lazy_shape()),
                            .dtype = T::Kind::kDefaultDType};
    if (comm.rank() == 0 || leaf.is_initialized()) {
      if constexpr (module_internal::ParamField<Leaf>) {
        signature.dtype = leaf.val().dtype();
      } else {
        signature.dtype = leaf.value().dtype();
      }
      signature.dtype_known = true;
    }
    local.push_back(std::move(signature));
  });
  absl::StatusOr<std::vector<LeafSignature>> agreed =
      AgreeOnSignatures(comm, local);
  if (!agreed.ok()) return agreed.status();
  absl::Status failure;
  size_t next = 0;
  ForEachLeaf(model, [&](std::string_view, auto& leaf) {
    if (!failure.ok()) return;
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    using T = typename module_internal::LeafValue<Leaf>::type;
    const LeafSignature& signature = (*agreed)[next++];
    TensorBase value;
    if (comm.rank() == 0) {
      if constexpr (module_internal::ParamField<Leaf>) {
        value = leaf.val().base();
      } else {
        value = leaf.value().base();
      }
    }
    absl::StatusOr<TensorBase> received =
        BroadcastLeafValue(comm, signature, value, leaf.lazy_device());
    if (!received.ok()) {
      failure = received.status();
      return;
    }
    if (comm.rank() == 0) return;  // rank 0 keeps its own values
    if constexpr (module_internal::ParamField<Leaf>) {
      T tensor(*std::move(received));
      if (leaf.lazy_is_require_grad()) tensor = tensor.set_require_grad(true);
      leaf = leaf.with_value(std::move(tensor));
    } else {
      leaf = leaf.with_value(T(*std::move(received)), leaf.id());
    }
  });
  return failure;
}

}  // namespace kindling::distributed

#endif  // KINDLING_DISTRIBUTED_MODULE_SYNC_H_
