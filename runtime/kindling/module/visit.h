// Read-only walks over a module: visiting parameters, counting them, and
// collecting devices. None of them initializes a lazy parameter: they read
// only ids, lazy shapes and lazy devices.
//
//   struct PrintShapes {
//     template <class T>
//     void operator()(std::string_view path, const kindling::Param<T>& param) {
//       std::cout << path << "\n";
//     }
//   };
//   kindling::VisitParams(model, PrintShapes{});
//
// A visitor is any callable taking (std::string_view path, const Param<T>&)
// for the parameter types the model has; a struct with a templated call
// operator covers them all, and the walk inlines to straight-line code.
#ifndef KINDLING_MODULE_VISIT_H_
#define KINDLING_MODULE_VISIT_H_

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"

namespace kindling {

// VisitParams() calls visitor(path, param) for every Param, in declaration
// order.
template <Module M, class Visitor>
void VisitParams(const M& module, Visitor&& visitor) {
  ForEachLeaf(module, [&](std::string_view path, const auto& leaf) {
    if constexpr (module_internal::ParamField<decltype(leaf)>) {
      visitor(path, leaf);
    }
  });
}

// VisitBuffers() calls visitor(path, buffer) for every Buffer.
template <Module M, class Visitor>
void VisitBuffers(const M& module, Visitor&& visitor) {
  ForEachLeaf(module, [&](std::string_view path, const auto& leaf) {
    if constexpr (module_internal::BufferField<decltype(leaf)>) {
      visitor(path, leaf);
    }
  });
}

// NumElements() is the number of elements of a shape: its num_elements() if
// it has one, else the product of its dimensions.
template <class Shape>
int64_t NumElements(const Shape& shape) {
  if constexpr (requires { shape.num_elements(); }) {
    return static_cast<int64_t>(shape.num_elements());
  } else {
    int64_t count = 1;
    for (const auto& dim : shape) count *= static_cast<int64_t>(dim);
    return count;
  }
}

// NumParams() is the number of trainable scalars (Param elements, not
// Buffers), from the lazy shapes: nothing is initialized.
template <Module M>
int64_t NumParams(const M& module) {
  int64_t count = 0;
  VisitParams(module, [&](std::string_view, const auto& param) {
    count += NumElements(param.lazy_shape());
  });
  return count;
}

// Devices() lists the distinct devices the parameters live or will live on,
// in first-seen order, from lazy devices: nothing is initialized.
template <class DeviceT, Module M>
std::vector<DeviceT> Devices(const M& module) {
  std::vector<DeviceT> devices;
  VisitParams(module, [&](std::string_view, const auto& param) {
    DeviceT device = param.lazy_device();
    if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
      devices.push_back(std::move(device));
    }
  });
  return devices;
}

}  // namespace kindling

#endif  // KINDLING_MODULE_VISIT_H_
