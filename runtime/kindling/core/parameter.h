// Parameter: what a type must offer to live inside a Param<T>.
//
// A parameter value is a cheap, copyable handle (a tensor shares its storage
// on copy), knows its device and shape, and carries a require-grad flag that
// can be changed by returning a new handle. Devices and shapes compare with
// ==, so that Param<T> can check a lazily produced value against the shape and
// device it promised. Param<T> needs nothing more, which keeps runtime/core
// below runtime/tensor: tests and benchmarks use small stand-in types, and
// Tensor<D, K> satisfies the concept in its own layer.
//
//   struct MyHandle {
//     using DeviceType = int;
//     using ShapeType = std::vector<int64_t>;
//     int device() const;
//     ShapeType shape() const;
//     bool is_require_grad() const;
//     MyHandle set_require_grad(bool require_grad) const;
//   };
//   static_assert(kindling::Parameter<MyHandle>);
#ifndef KINDLING_CORE_PARAMETER_H_
#define KINDLING_CORE_PARAMETER_H_

#include <concepts>
#include <ranges>
#include <sstream>
#include <string>

namespace kindling {

template <class T>
concept Parameter = std::copyable<T> && std::copyable<typename T::DeviceType> &&
    std::copyable<typename T::ShapeType> &&
    std::equality_comparable<typename T::DeviceType> &&
    std::equality_comparable<typename T::ShapeType> &&
    requires(const T& value, bool require_grad) {
  { value.device() } -> std::convertible_to<typename T::DeviceType>;
  { value.shape() } -> std::convertible_to<typename T::ShapeType>;
  { value.is_require_grad() } -> std::convertible_to<bool>;
  { value.set_require_grad(require_grad) } -> std::same_as<T>;
};

namespace internal {

// MetadataToString() prints a parameter's device or shape for a check
// message: with its operator<< when it has one (Device, Shape), else as
// "[a, b]" when it is a range (std::vector<int64_t>), else as "?".
template <class V>
std::string MetadataToString(const V& value) {
  std::ostringstream out;
  if constexpr (requires { out << value; }) {
    out << value;
  } else if constexpr (std::ranges::input_range<const V>) {
    out << "[";
    const char* separator = "";
    for (const auto& element : value) {
      out << separator << MetadataToString(element);
      separator = ", ";
    }
    out << "]";
  } else {
    out << "?";
  }
  return out.str();
}

}  // namespace internal
}  // namespace kindling

#endif  // KINDLING_CORE_PARAMETER_H_
