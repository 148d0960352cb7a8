#include "kindling/distributed/module_sync.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kindling::distributed {
namespace {

// One line per leaf: path, dtype index, dims (tab-separated; paths have no
// tabs or newlines).
std::string Encode(const std::vector<LeafSignature>& leaves) {
  std::string text;
  for (const LeafSignature& leaf : leaves) {
    absl::StrAppend(&text, leaf.path, "\t", static_cast<int>(leaf.dtype), "\t",
                    absl::StrJoin(leaf.shape.dims(), ","), "\n");
  }
  return text;
}

absl::StatusOr<std::vector<LeafSignature>> Decode(const std::string& text) {
  std::vector<LeafSignature> leaves;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    int dtype = 0;
    if (fields.size() != 3 || !absl::SimpleAtoi(fields[1], &dtype)) {
      return absl::InternalError(
          "BroadcastModule: rank 0's leaf list is "
          "malformed");
    }
    LeafSignature leaf{.path = fields[0],
                       .dtype = static_cast<DType>(dtype),
                       .dtype_known = true};
    for (absl::string_view dim :
         absl::StrSplit(fields[2], ',', absl::SkipEmpty())) {
      int64_t value = 0;
      if (!absl::SimpleAtoi(dim, &value)) {
        return absl::InternalError("BroadcastModule: a malformed shape");
      }
      leaf.shape.push_back(value);
    }
    leaves.push_back(std::move(leaf));
  }
  return leaves;
}

// FirstDifference() describes how `local` differs from rank 0's `leaves`,
// or is empty when they match.
std::string FirstDifference(const std::vector<LeafSignature>& local,
                            const std::vector<LeafSignature>& leaves) {
  for (size_t i = 0; i < local.size() && i < leaves.size(); ++i) {
    const LeafSignature& mine = local[i];
    const LeafSignature& theirs = leaves[i];
    if (mine.path != theirs.path) {
      return absl::StrFormat("leaf %d is '%s' here but '%s' on rank 0", i,
                             mine.path, theirs.path);
    }
    if (!(mine.shape == theirs.shape)) {
      return absl::StrFormat("'%s' has shape %s here but %s on rank 0",
                             mine.path, mine.shape.ToString(),
                             theirs.shape.ToString());
    }
    if (mine.dtype_known && mine.dtype != theirs.dtype) {
      return absl::StrFormat("'%s' is %s here but %s on rank 0", mine.path,
                             std::string(DTypeName(mine.dtype)),
                             std::string(DTypeName(theirs.dtype)));
    }
  }
  if (local.size() != leaves.size()) {
    return absl::StrFormat("the model has %d leaves here but %d on rank 0",
                           local.size(), leaves.size());
  }
  return "";
}

}  // namespace

absl::StatusOr<std::vector<LeafSignature>> AgreeOnSignatures(
    Communicator& comm, const std::vector<LeafSignature>& local) {
  std::string text = comm.rank() == 0 ? Encode(local) : "";
  int64_t size = static_cast<int64_t>(text.size());
  KINDLING_RETURN_IF_ERROR(comm.BroadcastHost(&size, sizeof(size), 0));
  text.resize(size);
  KINDLING_RETURN_IF_ERROR(comm.BroadcastHost(text.data(), size, 0));
  absl::StatusOr<std::vector<LeafSignature>> leaves = Decode(text);
  if (!leaves.ok()) return leaves.status();
  const std::string difference = FirstDifference(local, *leaves);
  // Every rank learns the highest rank whose model differs (0: none), so
  // all fail together instead of the others waiting for values.
  int64_t differing = difference.empty() ? 0 : comm.rank();
  KINDLING_RETURN_IF_ERROR(
      comm.AllReduceHost(&differing, 1, DType::kI64, ReduceOp::kMax));
  if (!difference.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("BroadcastModule: the model on rank ", comm.rank(),
                     " differs from rank 0's: ", difference));
  }
  if (differing != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "BroadcastModule: the model on rank ", differing,
        " differs from rank 0's (that rank's error names the leaf); every "
        "rank must build the same model"));
  }
  return leaves;
}

absl::StatusOr<TensorBase> BroadcastLeafValue(Communicator& comm,
                                              const LeafSignature& signature,
                                              const TensorBase& value,
                                              const Device& device) {
  TensorBase staged =
      comm.rank() == 0
          ? value.ToDevice(comm.device()).Contiguous()
          : TensorBase::Empty(signature.shape, signature.dtype, comm.device());
  KINDLING_RETURN_IF_ERROR(comm.Broadcast(staged, 0));
  return staged.ToDevice(device);
}

}  // namespace kindling::distributed
