// ParamId: the identity of a parameter across copies, checkpoints and runs.
//
// Optimizers key their per-parameter state (Adam's moments) and autodiff keys
// gradients by ParamId, so an id must survive copying a module, moving it to
// another device and saving/loading it. Ids are 64-bit random numbers: two
// independently created parameters collide with probability ~2^-64 per pair.
//
// The string form is exactly 16 lowercase hexadecimal digits, stable across
// versions; checkpoints store it.
//
//   kindling::ParamId id = kindling::ParamId::New();
//   absl::StatusOr<kindling::ParamId> back =
//   kindling::ParamId::Parse(id.ToString());
//
// ParamId is hashable with absl::Hash and std::hash, so it works as a key of
// absl::flat_hash_map and std::unordered_map.
#ifndef KINDLING_CORE_PARAM_ID_H_
#define KINDLING_CORE_PARAM_ID_H_

#include <compare>
#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace kindling {

class ParamId {
 public:
  // New() returns a fresh random id. Thread-safe.
  static ParamId New();

  // FromValue() wraps a known 64-bit value, e.g. one read from a checkpoint.
  static constexpr ParamId FromValue(uint64_t value) { return ParamId(value); }

  // Parse() reads the form ToString() writes: exactly 16 hexadecimal digits
  // (either case), nothing else. Anything else is InvalidArgument naming the
  // text.
  [[nodiscard]] static absl::StatusOr<ParamId> Parse(std::string_view text);

  constexpr uint64_t value() const { return value_; }

  // ToString() returns 16 lowercase hexadecimal digits, e.g.
  // "00c0ffee12345678".
  std::string ToString() const;

  friend constexpr bool operator==(ParamId, ParamId) = default;
  friend constexpr auto operator<=>(ParamId, ParamId) = default;

  template <typename H>
  friend H AbslHashValue(H state, ParamId id) {
    return H::combine(std::move(state), id.value_);
  }

  friend std::ostream& operator<<(std::ostream& os, ParamId id) {
    return os << id.ToString();
  }

 private:
  explicit constexpr ParamId(uint64_t value) : value_(value) {}

  uint64_t value_;
};

}  // namespace kindling

template <>
struct std::hash<kindling::ParamId> {
  size_t operator()(kindling::ParamId id) const noexcept {
    return std::hash<uint64_t>{}(id.value());
  }
};

#endif  // KINDLING_CORE_PARAM_ID_H_
