// A restricted unpickler for the `data.pkl` of a torch.save file.
//
// A pickle is a program for a small stack machine, and Python's unpickler
// will call any global it names (`os.system` included). This one runs only
// the opcodes a saved state_dict uses (protocols 2 to 4: containers, strings,
// numbers, memo, GLOBAL/STACK_GLOBAL, REDUCE, BUILD, BINPERSID) and resolves
// only the globals such a file names:
//
//   collections.OrderedDict            -> a dict
//   torch._utils._rebuild_tensor_v2    -> a tensor (storage, offset, size,
//                                         stride, ...)
//   torch._utils._rebuild_parameter    -> its tensor
//   torch.<Float|Double|Half|BFloat16|Long|Int|Short|Char|Byte|Bool>Storage
//                                      -> a storage dtype
//
// and a persistent id ('storage', <dtype>, key, location, numel) becomes a
// storage reference. Every other global, and every other opcode, is an
// InvalidArgument error naming it and its byte offset: nothing is ever
// executed. Containers nest at most kMaxPickleDepth deep, so a hostile file
// cannot exhaust the stack (the fuzzer checks this).
//
//   absl::StatusOr<PickleValue> root = Unpickle(bytes, "model.pt/data.pkl");
//
// This layer depends on Abseil only; the fuzzer builds it alone.
#ifndef KINDLING_IO_PICKLE_H_
#define KINDLING_IO_PICKLE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kindling::io {

// kMaxPickleDepth bounds how deeply containers may nest.
inline constexpr int kMaxPickleDepth = 64;

// TorchStorageType: the element type a storage class names.
enum class TorchStorageType : uint8_t {
  kF32,
  kF64,
  kF16,
  kBF16,
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kBool,
};

// TorchStorageTypeName() is the class name: "FloatStorage", ...
std::string_view TorchStorageTypeName(TorchStorageType type);

// TorchStorageRef: a persistent id, ('storage', type, key, location, numel).
struct TorchStorageRef {
  TorchStorageType type = TorchStorageType::kF32;
  std::string key;       // the record name under data/
  std::string location;  // "cpu", "cuda:0", ...
  int64_t numel = 0;     // elements of `type`
};

// TorchTensorRef: what _rebuild_tensor_v2 would have built.
struct TorchTensorRef {
  TorchStorageRef storage;
  int64_t offset = 0;  // in elements
  std::vector<int64_t> size;
  std::vector<int64_t> stride;
};

// PickleValue: one value of the machine. Lists and dicts are shared, as in
// Python, so that a memoized container and the stack see the same object. A
// container is sealed once it is put inside another and may not change
// after, so values never form cycles and `depth` is exact.
class PickleValue {
 public:
  enum class Kind : uint8_t {
    kNone,
    kBool,
    kInt,
    kFloat,
    kString,
    kTuple,
    kList,
    kDict,
    kStorageType,  // a storage class (GLOBAL torch.FloatStorage)
    kCallable,     // an allowed global function (OrderedDict, rebuilds)
    kStorage,
    kTensor,
  };
  using Items = std::vector<PickleValue>;
  using Entries = std::vector<std::pair<PickleValue, PickleValue>>;

  PickleValue() = default;

  Kind kind() const { return kind_; }
  // KindName() is a word for messages: "dict", "tensor", ...
  std::string_view KindName() const;
  // depth(): 0 for scalars, 1 + the deepest item for containers.
  int depth() const;

  bool boolean() const { return int_ != 0; }
  int64_t integer() const { return int_; }
  double floating() const { return float_; }
  // string() is the text of a kString, or the dotted name of a kCallable.
  const std::string& string() const;
  TorchStorageType storage_type() const {
    return static_cast<TorchStorageType>(int_);
  }
  // items() of a kTuple or kList; entries() of a kDict, in insertion order.
  const Items& items() const;
  const Entries& entries() const;
  // storage() of a kStorage; tensor() of a kTensor.
  const TorchStorageRef& storage() const { return tensor_->storage; }
  const TorchTensorRef& tensor() const { return *tensor_; }

 private:
  friend class Unpickler;
  struct Container;

  Kind kind_ = Kind::kNone;
  int64_t int_ = 0;
  double float_ = 0;
  // Shared, so that memo copies of a long string cost nothing.
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<Container> container_;
  std::shared_ptr<const TorchTensorRef> tensor_;  // a kStorage's ref too
};

// Unpickle() runs `pickle` and returns the value STOP leaves. `name` labels
// errors ("model.pt/archive/data.pkl").
[[nodiscard]] absl::StatusOr<PickleValue> Unpickle(
    std::span<const uint8_t> pickle, std::string_view name);

}  // namespace kindling::io

#endif  // KINDLING_IO_PICKLE_H_
