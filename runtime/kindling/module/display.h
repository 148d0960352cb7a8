// ModuleToString(): a readable tree of a module, like PyTorch's print(model),
// with every parameter's shape, device and state and each submodule's
// parameter count. Printing reads lazy metadata only: nothing initializes.
//
//   demo::Mlp(
//     (fc1): kindling::nn::Linear(
//       (weight): Param[784, 128] cpu lazy
//       (bias): Param[128] cpu lazy
//     )  # 100480 params
//     (num_classes): 10
//   )  # 100480 params
#ifndef KINDLING_MODULE_DISPLAY_H_
#define KINDLING_MODULE_DISPLAY_H_

#include <cstddef>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/record.h"
#include "kindling/module/visit.h"
#include "kindling/module/walk.h"

namespace kindling {
namespace module_internal {

// Writes `value` if it can be streamed, else a placeholder.
template <class T>
void WriteValue(std::ostream& out, const T& value) {
  if constexpr (requires { out << value; }) {
    out << value;
  } else {
    out << "<" << sizeof(T) << "-byte value>";
  }
}

class TreePrinter {
 public:
  explicit TreePrinter(std::ostream& out) : out_(out) {}

  // Prints "(name): <field>" at the current depth.
  template <class Field>
  void Entry(std::string_view name, const Field& field) {
    Indent();
    out_ << "(" << name << "): ";
    Value(field);
    out_ << "\n";
  }

  // Prints a field's value; multi-line values end without a newline.
  template <class Field>
  void Value(const Field& field) {
    if constexpr (ParamField<Field>) {
      out_ << "Param" << FormatShape(field.lazy_shape()) << " ";
      WriteValue(out_, field.lazy_device());
      out_ << (field.is_initialized() ? "" : " lazy")
           << (field.lazy_is_require_grad() ? "" : " no_grad");
    } else if constexpr (BufferField<Field>) {
      out_ << "Buffer" << FormatShape(field.lazy_shape()) << " ";
      WriteValue(out_, field.lazy_device());
      out_ << (field.is_initialized() ? "" : " lazy");
    } else if constexpr (Module<Field>) {
      using Traits = ModuleTraits<Field>;
      out_ << Traits::kTypeName << "(\n";
      ++depth_;
      ForEachField(field, [&](const char* name, const auto& member) {
        Entry(name, member);
      });
      ForEachConstant(field, [&](const char* name, const auto& value) {
        Indent();
        out_ << "(" << name << "): ";
        WriteValue(out_, value);
        out_ << "\n";
      });
      --depth_;
      Indent();
      out_ << ")  # " << NumParams(field) << " params";
    } else if constexpr (SequenceField<Field>) {
      out_ << "[\n";
      ++depth_;
      size_t index = 0;
      for (const auto& element : field) Entry(std::to_string(index++), element);
      --depth_;
      Indent();
      out_ << "]";
    } else if constexpr (OptionalField<Field>) {
      if (field.has_value()) {
        Value(*field);
      } else {
        out_ << "None";
      }
    } else if constexpr (VariantField<Field>) {
      std::visit([&](const auto& alternative) { Value(alternative); }, field);
    } else if constexpr (TupleField<Field>) {
      out_ << "(\n";
      ++depth_;
      ForEachTupleElement(field, [&](size_t index, const auto& element) {
        Entry(std::to_string(index), element);
      });
      --depth_;
      Indent();
      out_ << ")";
    } else if constexpr (std::is_same_v<Field, std::monostate>) {
      out_ << "std::monostate";
    } else {
      RequireConstantField<Field>();
      WriteValue(out_, field);
    }
  }

 private:
  void Indent() {
    for (int i = 0; i < depth_; ++i) out_ << "  ";
  }

  std::ostream& out_;
  int depth_ = 0;
};

}  // namespace module_internal

// ModuleToString() returns the tree of `module`, ending with a newline.
template <Module M>
std::string ModuleToString(const M& module) {
  std::ostringstream out;
  module_internal::TreePrinter printer(out);
  printer.Value(module);
  out << "\n";
  return out.str();
}

}  // namespace kindling

#endif  // KINDLING_MODULE_DISPLAY_H_
