#include "kindling/io/pickle.h"

#include <array>
#include <cstring>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kindling/io/strings.h"

namespace kindling::io {

struct PickleValue::Container {
  Items items;
  Entries entries;
  int depth = 1;
  bool sealed = false;
};

namespace {

struct StorageClass {
  std::string_view name;
  TorchStorageType type;
};

constexpr std::array<StorageClass, 10> kStorageClasses = {{
    {"FloatStorage", TorchStorageType::kF32},
    {"DoubleStorage", TorchStorageType::kF64},
    {"HalfStorage", TorchStorageType::kF16},
    {"BFloat16Storage", TorchStorageType::kBF16},
    {"LongStorage", TorchStorageType::kI64},
    {"IntStorage", TorchStorageType::kI32},
    {"ShortStorage", TorchStorageType::kI16},
    {"CharStorage", TorchStorageType::kI8},
    {"ByteStorage", TorchStorageType::kU8},
    {"BoolStorage", TorchStorageType::kBool},
}};

constexpr std::string_view kOrderedDict = "collections.OrderedDict";
constexpr std::string_view kRebuildTensor = "torch._utils._rebuild_tensor_v2";
constexpr std::string_view kRebuildParameter =
    "torch._utils._rebuild_parameter";

// The opcodes this reader runs (pickletools' names).
enum Opcode : uint8_t {
  kMark = '(',
  kStop = '.',
  kPop = '0',
  kPopMark = '1',
  kBinFloat = 'G',
  kBinInt = 'J',
  kBinInt1 = 'K',
  kBinInt2 = 'M',
  kNone = 'N',
  kBinPersId = 'Q',
  kReduce = 'R',
  kBinUnicode = 'X',
  kEmptyList = ']',
  kAppend = 'a',
  kBuild = 'b',
  kGlobal = 'c',
  kDict = 'd',
  kAppends = 'e',
  kBinGet = 'h',
  kLongBinGet = 'j',
  kList = 'l',
  kBinPut = 'q',
  kLongBinPut = 'r',
  kSetItem = 's',
  kTuple = 't',
  kSetItems = 'u',
  kEmptyDict = '}',
  kEmptyTuple = ')',
  kProto = 0x80,
  kTuple1 = 0x85,
  kTuple2 = 0x86,
  kTuple3 = 0x87,
  kNewTrue = 0x88,
  kNewFalse = 0x89,
  kLong1 = 0x8a,
  kShortBinUnicode = 0x8c,
  kBinUnicode8 = 0x8d,
  kStackGlobal = 0x93,
  kMemoize = 0x94,
  kFrame = 0x95,
};

}  // namespace

std::string_view TorchStorageTypeName(TorchStorageType type) {
  for (const StorageClass& entry : kStorageClasses) {
    if (entry.type == type) return entry.name;
  }
  return "?";
}

std::string_view PickleValue::KindName() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kTuple:
      return "tuple";
    case Kind::kList:
      return "list";
    case Kind::kDict:
      return "dict";
    case Kind::kStorageType:
      return "storage class";
    case Kind::kCallable:
      return "function";
    case Kind::kStorage:
      return "storage";
    case Kind::kTensor:
      return "tensor";
  }
  return "?";
}

const std::string& PickleValue::string() const {
  static const std::string* const kEmpty = new std::string();
  return string_ == nullptr ? *kEmpty : *string_;
}

int PickleValue::depth() const {
  return container_ == nullptr ? 0 : container_->depth;
}

const PickleValue::Items& PickleValue::items() const {
  return container_->items;
}

const PickleValue::Entries& PickleValue::entries() const {
  return container_->entries;
}

// Unpickler: the stack machine over one pickle.
class Unpickler {
 public:
  Unpickler(std::span<const uint8_t> pickle, std::string_view name)
      : pickle_(pickle), name_(name) {}

  absl::StatusOr<PickleValue> Run();

 private:
  // Error() is InvalidArgument naming the pickle and the current opcode's
  // byte offset.
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        Cat(name_, ": byte ", op_start_, ": ", what));
  }

  absl::Status Step(uint8_t op);

  // Reading the operand bytes.
  absl::StatusOr<std::span<const uint8_t>> Take(uint64_t n);
  absl::StatusOr<uint64_t> TakeUnsigned(int bytes);
  absl::StatusOr<std::string> TakeLine();

  absl::StatusOr<PickleValue> Pop();
  absl::StatusOr<std::vector<PickleValue>> PopToMark();
  absl::StatusOr<PickleValue*> Top();

  // Values.
  static PickleValue Scalar(PickleValue::Kind kind, int64_t value);
  static PickleValue Text(PickleValue::Kind kind, std::string text);
  static PickleValue NewContainer(PickleValue::Kind kind);
  absl::StatusOr<PickleValue> NewTuple(std::vector<PickleValue> items);

  // Nesting: `item` goes inside `container`.
  absl::Status Nest(PickleValue& container, const PickleValue& item);
  absl::Status CheckMutable(const PickleValue& container) const;
  absl::Status Append(PickleValue& list, std::vector<PickleValue> items);
  absl::Status SetItems(PickleValue& dict, std::vector<PickleValue> flat);

  absl::StatusOr<PickleValue> Global(std::string_view module,
                                     std::string_view name) const;
  absl::StatusOr<PickleValue> Reduce(const PickleValue& callable,
                                     const PickleValue& args) const;
  absl::StatusOr<PickleValue> RebuildTensor(const PickleValue& args) const;
  absl::StatusOr<PickleValue> PersistentLoad(const PickleValue& pid) const;
  absl::StatusOr<std::vector<int64_t>> IntTuple(const PickleValue& value,
                                                std::string_view what) const;

  std::span<const uint8_t> pickle_;
  std::string_view name_;
  size_t pos_ = 0;
  size_t op_start_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<size_t> marks_;
  absl::flat_hash_map<uint64_t, PickleValue> memo_;
  bool stopped_ = false;
};

absl::StatusOr<std::span<const uint8_t>> Unpickler::Take(uint64_t n) {
  if (n > pickle_.size() - pos_) {
    return Error(
        Cat("truncated: an operand of ", n, " bytes runs past the end"));
  }
  std::span<const uint8_t> bytes = pickle_.subspan(pos_, n);
  pos_ += n;
  return bytes;
}

absl::StatusOr<uint64_t> Unpickler::TakeUnsigned(int bytes) {
  absl::StatusOr<std::span<const uint8_t>> raw = Take(bytes);
  if (!raw.ok()) return raw.status();
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | (*raw)[i];
  return value;
}

absl::StatusOr<std::string> Unpickler::TakeLine() {
  const size_t start = pos_;
  while (pos_ < pickle_.size() && pickle_[pos_] != '\n') ++pos_;
  if (pos_ == pickle_.size()) return Error("truncated: a line has no end");
  std::string line(reinterpret_cast<const char*>(pickle_.data()) + start,
                   pos_ - start);
  ++pos_;
  return line;
}

absl::StatusOr<PickleValue> Unpickler::Pop() {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) return Error("pops an empty stack");
  PickleValue value = std::move(stack_.back());
  stack_.pop_back();
  return value;
}

absl::StatusOr<std::vector<PickleValue>> Unpickler::PopToMark() {
  if (marks_.empty()) return Error("needs a MARK and there is none");
  const size_t mark = marks_.back();
  marks_.pop_back();
  std::vector<PickleValue> items(std::make_move_iterator(stack_.begin() + mark),
                                 std::make_move_iterator(stack_.end()));
  stack_.resize(mark);
  return items;
}

absl::StatusOr<PickleValue*> Unpickler::Top() {
  const size_t floor = marks_.empty() ? 0 : marks_.back();
  if (stack_.size() <= floor) return Error("needs a value on an empty stack");
  return &stack_.back();
}

PickleValue Unpickler::Scalar(PickleValue::Kind kind, int64_t value) {
  PickleValue result;
  result.kind_ = kind;
  result.int_ = value;
  return result;
}

PickleValue Unpickler::Text(PickleValue::Kind kind, std::string text) {
  PickleValue result;
  result.kind_ = kind;
  result.string_ = std::make_shared<const std::string>(std::move(text));
  return result;
}

PickleValue Unpickler::NewContainer(PickleValue::Kind kind) {
  PickleValue result;
  result.kind_ = kind;
  result.container_ = std::make_shared<PickleValue::Container>();
  return result;
}

absl::Status Unpickler::CheckMutable(const PickleValue& container) const {
  if (container.container_->sealed) {
    return Error(Cat("changes a ", container.KindName(),
                     " already inside another container, which a "
                     "saved state_dict never does"));
  }
  return absl::OkStatus();
}

absl::Status Unpickler::Nest(PickleValue& container, const PickleValue& item) {
  if (item.container_ != nullptr) {
    // Any other cycle would change a sealed container (CheckMutable).
    if (item.container_ == container.container_) {
      return Error(Cat("puts a ", item.KindName(), " inside itself"));
    }
    if (item.container_->depth + 1 > kMaxPickleDepth) {
      return Error(
          Cat("containers nest deeper than ", kMaxPickleDepth, " levels"));
    }
    item.container_->sealed = true;
    container.container_->depth =
        std::max(container.container_->depth, item.container_->depth + 1);
  }
  return absl::OkStatus();
}

absl::StatusOr<PickleValue> Unpickler::NewTuple(
    std::vector<PickleValue> items) {
  PickleValue tuple = NewContainer(PickleValue::Kind::kTuple);
  for (const PickleValue& item : items) {
    if (absl::Status nested = Nest(tuple, item); !nested.ok()) return nested;
  }
  tuple.container_->items = std::move(items);
  tuple.container_->sealed = true;  // tuples are immutable
  return tuple;
}

absl::Status Unpickler::Append(PickleValue& list,
                               std::vector<PickleValue> items) {
  if (list.kind() != PickleValue::Kind::kList) {
    return Error(Cat("appends to a ", list.KindName(), ", not a list"));
  }
  if (absl::Status ok = CheckMutable(list); !ok.ok()) return ok;
  for (PickleValue& item : items) {
    if (absl::Status nested = Nest(list, item); !nested.ok()) return nested;
    list.container_->items.push_back(std::move(item));
  }
  return absl::OkStatus();
}

absl::Status Unpickler::SetItems(PickleValue& dict,
                                 std::vector<PickleValue> flat) {
  if (dict.kind() != PickleValue::Kind::kDict) {
    return Error(Cat("sets items of a ", dict.KindName(), ", not a dict"));
  }
  if (flat.size() % 2 != 0) return Error("sets a key without a value");
  if (absl::Status ok = CheckMutable(dict); !ok.ok()) return ok;
  for (size_t i = 0; i < flat.size(); i += 2) {
    for (const PickleValue* part : {&flat[i], &flat[i + 1]}) {
      if (absl::Status nested = Nest(dict, *part); !nested.ok()) return nested;
    }
    // Python replaces the value of a key set twice; keys in a state_dict are
    // strings, so only those are compared.
    PickleValue::Entries& entries = dict.container_->entries;
    bool replaced = false;
    if (flat[i].kind() == PickleValue::Kind::kString) {
      for (auto& [key, value] : entries) {
        if (key.kind() == PickleValue::Kind::kString &&
            key.string() == flat[i].string()) {
          value = std::move(flat[i + 1]);
          replaced = true;
          break;
        }
      }
    }
    if (!replaced)
      entries.emplace_back(std::move(flat[i]), std::move(flat[i + 1]));
  }
  return absl::OkStatus();
}

absl::StatusOr<PickleValue> Unpickler::Global(std::string_view module,
                                              std::string_view name) const {
  const std::string dotted = Cat(module, ".", name);
  if (dotted == kOrderedDict || dotted == kRebuildTensor ||
      dotted == kRebuildParameter) {
    return Text(PickleValue::Kind::kCallable, dotted);
  }
  if (module == "torch") {
    for (const StorageClass& entry : kStorageClasses) {
      if (name == entry.name) {
        return Scalar(PickleValue::Kind::kStorageType,
                      static_cast<int64_t>(entry.type));
      }
    }
  }
  return Error(Cat(
      "global '", dotted,
      "' is not part of a saved state_dict of tensors; the reader refuses it "
      "(it never runs pickled code)"));
}

absl::StatusOr<std::vector<int64_t>> Unpickler::IntTuple(
    const PickleValue& value, std::string_view what) const {
  if (value.kind() != PickleValue::Kind::kTuple) {
    return Error(
        Cat("tensor ", what, " is a ", value.KindName(), ", not a tuple"));
  }
  std::vector<int64_t> numbers;
  for (const PickleValue& item : value.items()) {
    if (item.kind() != PickleValue::Kind::kInt || item.integer() < 0) {
      return Error(
          Cat("tensor ", what, " holds something other than an int >= 0"));
    }
    numbers.push_back(item.integer());
  }
  return numbers;
}

absl::StatusOr<PickleValue> Unpickler::RebuildTensor(
    const PickleValue& args) const {
  // (storage, storage_offset, size, stride, requires_grad, backward_hooks
  //  [, metadata])
  const PickleValue::Items& items = args.items();
  if (items.size() != 6 && items.size() != 7) {
    return Error(
        Cat("_rebuild_tensor_v2 takes 6 or 7 arguments, "
            "not ",
            items.size()));
  }
  if (items[0].kind() != PickleValue::Kind::kStorage) {
    return Error(
        Cat("_rebuild_tensor_v2's storage is a ", items[0].KindName()));
  }
  if (items[1].kind() != PickleValue::Kind::kInt || items[1].integer() < 0) {
    return Error("_rebuild_tensor_v2's storage offset is not an int >= 0");
  }
  auto tensor = std::make_shared<TorchTensorRef>();
  tensor->storage = items[0].storage();
  tensor->offset = items[1].integer();
  absl::StatusOr<std::vector<int64_t>> size = IntTuple(items[2], "size");
  if (!size.ok()) return size.status();
  absl::StatusOr<std::vector<int64_t>> stride = IntTuple(items[3], "stride");
  if (!stride.ok()) return stride.status();
  if (size->size() != stride->size()) {
    return Error(Cat("tensor size has ", size->size(),
                     " dimensions and stride ", stride->size()));
  }
  tensor->size = *std::move(size);
  tensor->stride = *std::move(stride);
  PickleValue result;
  result.kind_ = PickleValue::Kind::kTensor;
  result.tensor_ = std::move(tensor);
  return result;
}

absl::StatusOr<PickleValue> Unpickler::Reduce(const PickleValue& callable,
                                              const PickleValue& args) const {
  if (callable.kind() != PickleValue::Kind::kCallable) {
    return Error(
        Cat("calls a ", callable.KindName(), ", which is not a function"));
  }
  if (args.kind() != PickleValue::Kind::kTuple) {
    return Error(Cat("calls ", callable.string(), " with a ", args.KindName(),
                     ", not a tuple"));
  }
  if (callable.string() == kOrderedDict) {
    if (!args.items().empty()) {
      return Error("OrderedDict is called with arguments");
    }
    return NewContainer(PickleValue::Kind::kDict);
  }
  if (callable.string() == kRebuildTensor) return RebuildTensor(args);
  // _rebuild_parameter(data, requires_grad, backward_hooks): the data.
  if (args.items().size() != 3 ||
      args.items()[0].kind() != PickleValue::Kind::kTensor) {
    return Error("_rebuild_parameter takes (tensor, requires_grad, hooks)");
  }
  return args.items()[0];
}

absl::StatusOr<PickleValue> Unpickler::PersistentLoad(
    const PickleValue& pid) const {
  // ('storage', storage class, key, location, numel)
  if (pid.kind() != PickleValue::Kind::kTuple || pid.items().size() != 5 ||
      pid.items()[0].kind() != PickleValue::Kind::kString ||
      pid.items()[0].string() != "storage") {
    return Error(
        "persistent id is not ('storage', type, key, location, numel)");
  }
  const PickleValue::Items& items = pid.items();
  if (items[1].kind() != PickleValue::Kind::kStorageType ||
      items[2].kind() != PickleValue::Kind::kString ||
      items[3].kind() != PickleValue::Kind::kString ||
      items[4].kind() != PickleValue::Kind::kInt || items[4].integer() < 0) {
    return Error(
        "persistent id is not ('storage', type, key, location, numel)");
  }
  auto ref = std::make_shared<TorchTensorRef>();
  ref->storage = {.type = items[1].storage_type(),
                  .key = items[2].string(),
                  .location = items[3].string(),
                  .numel = items[4].integer()};
  PickleValue result;
  result.kind_ = PickleValue::Kind::kStorage;
  result.tensor_ = std::move(ref);
  return result;
}

absl::Status Unpickler::Step(uint8_t op) {
  using Kind = PickleValue::Kind;
  switch (op) {
    case kProto: {
      absl::StatusOr<uint64_t> version = TakeUnsigned(1);
      if (!version.ok()) return version.status();
      if (*version > 5) {
        return Error(Cat("pickle protocol ", *version, " is unknown"));
      }
      return absl::OkStatus();
    }
    case kFrame:
      return TakeUnsigned(8).status();  // a length hint only
    case kStop:
      stopped_ = true;
      return absl::OkStatus();
    case kMark:
      marks_.push_back(stack_.size());
      return absl::OkStatus();
    case kPop:
      return Pop().status();
    case kPopMark:
      return PopToMark().status();
    case kNone:
      stack_.emplace_back();
      return absl::OkStatus();
    case kNewTrue:
    case kNewFalse:
      stack_.push_back(Scalar(Kind::kBool, op == kNewTrue ? 1 : 0));
      return absl::OkStatus();
    case kBinInt:
    case kBinInt1:
    case kBinInt2: {
      const int bytes = op == kBinInt ? 4 : op == kBinInt1 ? 1 : 2;
      absl::StatusOr<uint64_t> raw = TakeUnsigned(bytes);
      if (!raw.ok()) return raw.status();
      const int64_t value =
          op == kBinInt ? static_cast<int32_t>(static_cast<uint32_t>(*raw))
                        : static_cast<int64_t>(*raw);
      stack_.push_back(Scalar(Kind::kInt, value));
      return absl::OkStatus();
    }
    case kLong1: {
      absl::StatusOr<uint64_t> length = TakeUnsigned(1);
      if (!length.ok()) return length.status();
      if (*length > 8) return Error("LONG1 integer wider than 64 bits");
      absl::StatusOr<uint64_t> raw = TakeUnsigned(static_cast<int>(*length));
      if (!raw.ok()) return raw.status();
      uint64_t value = *raw;
      const int bits = static_cast<int>(*length) * 8;
      if (bits > 0 && bits < 64 && (value >> (bits - 1)) & 1) {
        value |= ~uint64_t{0} << bits;  // sign-extend
      }
      stack_.push_back(Scalar(Kind::kInt, static_cast<int64_t>(value)));
      return absl::OkStatus();
    }
    case kBinFloat: {
      absl::StatusOr<std::span<const uint8_t>> raw = Take(8);
      if (!raw.ok()) return raw.status();
      uint64_t bits = 0;
      for (uint8_t byte : *raw) bits = (bits << 8) | byte;  // big-endian
      double value;
      std::memcpy(&value, &bits, sizeof(value));
      PickleValue number;
      number.kind_ = Kind::kFloat;
      number.float_ = value;
      stack_.push_back(std::move(number));
      return absl::OkStatus();
    }
    case kShortBinUnicode:
    case kBinUnicode:
    case kBinUnicode8: {
      const int width = op == kShortBinUnicode ? 1 : op == kBinUnicode ? 4 : 8;
      absl::StatusOr<uint64_t> length = TakeUnsigned(width);
      if (!length.ok()) return length.status();
      absl::StatusOr<std::span<const uint8_t>> raw = Take(*length);
      if (!raw.ok()) return raw.status();
      stack_.push_back(Text(
          Kind::kString, std::string(reinterpret_cast<const char*>(raw->data()),
                                     raw->size())));
      return absl::OkStatus();
    }
    case kEmptyTuple:
    case kTuple1:
    case kTuple2:
    case kTuple3:
    case kTuple: {
      std::vector<PickleValue> items;
      if (op == kTuple) {
        absl::StatusOr<std::vector<PickleValue>> popped = PopToMark();
        if (!popped.ok()) return popped.status();
        items = *std::move(popped);
      } else {
        const int count = op == kEmptyTuple ? 0 : op - kTuple1 + 1;
        items.resize(count);
        for (int i = count - 1; i >= 0; --i) {
          absl::StatusOr<PickleValue> item = Pop();
          if (!item.ok()) return item.status();
          items[i] = *std::move(item);
        }
      }
      absl::StatusOr<PickleValue> tuple = NewTuple(std::move(items));
      if (!tuple.ok()) return tuple.status();
      stack_.push_back(*std::move(tuple));
      return absl::OkStatus();
    }
    case kEmptyList:
      stack_.push_back(NewContainer(Kind::kList));
      return absl::OkStatus();
    case kEmptyDict:
      stack_.push_back(NewContainer(Kind::kDict));
      return absl::OkStatus();
    case kList:
    case kDict: {
      absl::StatusOr<std::vector<PickleValue>> items = PopToMark();
      if (!items.ok()) return items.status();
      PickleValue container =
          NewContainer(op == kList ? Kind::kList : Kind::kDict);
      absl::Status filled = op == kList
                                ? Append(container, *std::move(items))
                                : SetItems(container, *std::move(items));
      if (!filled.ok()) return filled;
      stack_.push_back(std::move(container));
      return absl::OkStatus();
    }
    case kAppend:
    case kSetItem: {
      const int count = op == kAppend ? 1 : 2;
      std::vector<PickleValue> items(count);
      for (int i = count - 1; i >= 0; --i) {
        absl::StatusOr<PickleValue> item = Pop();
        if (!item.ok()) return item.status();
        items[i] = *std::move(item);
      }
      absl::StatusOr<PickleValue*> target = Top();
      if (!target.ok()) return target.status();
      return op == kAppend ? Append(**target, std::move(items))
                           : SetItems(**target, std::move(items));
    }
    case kAppends:
    case kSetItems: {
      absl::StatusOr<std::vector<PickleValue>> items = PopToMark();
      if (!items.ok()) return items.status();
      absl::StatusOr<PickleValue*> target = Top();
      if (!target.ok()) return target.status();
      return op == kAppends ? Append(**target, *std::move(items))
                            : SetItems(**target, *std::move(items));
    }
    case kBinPut:
    case kLongBinPut:
    case kMemoize: {
      uint64_t index = memo_.size();
      if (op != kMemoize) {
        absl::StatusOr<uint64_t> raw = TakeUnsigned(op == kBinPut ? 1 : 4);
        if (!raw.ok()) return raw.status();
        index = *raw;
      }
      absl::StatusOr<PickleValue*> top = Top();
      if (!top.ok()) return top.status();
      memo_[index] = **top;
      return absl::OkStatus();
    }
    case kBinGet:
    case kLongBinGet: {
      absl::StatusOr<uint64_t> index = TakeUnsigned(op == kBinGet ? 1 : 4);
      if (!index.ok()) return index.status();
      auto it = memo_.find(*index);
      if (it == memo_.end()) {
        return Error(Cat("memo entry ", *index, " was never stored"));
      }
      stack_.push_back(it->second);
      return absl::OkStatus();
    }
    case kGlobal:
    case kStackGlobal: {
      std::string module, name;
      if (op == kGlobal) {
        absl::StatusOr<std::string> module_line = TakeLine();
        if (!module_line.ok()) return module_line.status();
        absl::StatusOr<std::string> name_line = TakeLine();
        if (!name_line.ok()) return name_line.status();
        module = *std::move(module_line);
        name = *std::move(name_line);
      } else {
        absl::StatusOr<PickleValue> name_value = Pop();
        if (!name_value.ok()) return name_value.status();
        absl::StatusOr<PickleValue> module_value = Pop();
        if (!module_value.ok()) return module_value.status();
        if (module_value->kind() != Kind::kString ||
            name_value->kind() != Kind::kString) {
          return Error("STACK_GLOBAL needs two strings");
        }
        module = module_value->string();
        name = name_value->string();
      }
      absl::StatusOr<PickleValue> global = Global(module, name);
      if (!global.ok()) return global.status();
      stack_.push_back(*std::move(global));
      return absl::OkStatus();
    }
    case kReduce: {
      absl::StatusOr<PickleValue> args = Pop();
      if (!args.ok()) return args.status();
      absl::StatusOr<PickleValue> callable = Pop();
      if (!callable.ok()) return callable.status();
      absl::StatusOr<PickleValue> result = Reduce(*callable, *args);
      if (!result.ok()) return result.status();
      stack_.push_back(*std::move(result));
      return absl::OkStatus();
    }
    case kBuild: {
      // OrderedDict's state (a state_dict's `_metadata` attribute): checked
      // and dropped, as Kindling has no use for it.
      absl::StatusOr<PickleValue> state = Pop();
      if (!state.ok()) return state.status();
      absl::StatusOr<PickleValue*> target = Top();
      if (!target.ok()) return target.status();
      if ((*target)->kind() != Kind::kDict) {
        return Error(Cat("sets the state of a ", (*target)->KindName(),
                         "; only a dict's state is accepted"));
      }
      return absl::OkStatus();
    }
    case kBinPersId: {
      absl::StatusOr<PickleValue> pid = Pop();
      if (!pid.ok()) return pid.status();
      absl::StatusOr<PickleValue> storage = PersistentLoad(*pid);
      if (!storage.ok()) return storage.status();
      stack_.push_back(*std::move(storage));
      return absl::OkStatus();
    }
    default:
      return Error(absl::StrFormat(
          "opcode 0x%02x is not one a saved state_dict uses; refused", op));
  }
}

absl::StatusOr<PickleValue> Unpickler::Run() {
  while (!stopped_) {
    if (pos_ >= pickle_.size()) {
      op_start_ = pos_;
      return Error("truncated: the pickle ends before STOP");
    }
    op_start_ = pos_;
    const uint8_t op = pickle_[pos_++];
    if (absl::Status status = Step(op); !status.ok()) return status;
  }
  if (stack_.size() != 1 || !marks_.empty()) {
    return Error(
        Cat("STOP leaves ", stack_.size(), " values on the stack, not one"));
  }
  return std::move(stack_.back());
}

absl::StatusOr<PickleValue> Unpickle(std::span<const uint8_t> pickle,
                                     std::string_view name) {
  Unpickler unpickler(pickle, name);
  return unpickler.Run();
}

}  // namespace kindling::io
