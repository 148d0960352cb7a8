// Test modules with hand-written ModuleTraits, in exactly the shape
// kindling-gen writes (see kindling/module/module_traits.h). They let the
// runtime/module tests run without the generator, and serve as the
// hand-written baseline the module benchmark compares generated code with.
#ifndef KINDLING_TESTS_MODULE_TEST_MODULES_H_
#define KINDLING_TESTS_MODULE_TEST_MODULES_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kindling/module/module.h"
#include "tests/core/counting_parameter.h"

namespace demo {

using ::kindling::testing::CountingParam;
using ::kindling::testing::CountingParameter;

struct Dense {
  CountingParam weight;
  std::optional<CountingParam> bias;
  int64_t in_features = 0;
};

struct Identity {
  int64_t width = 0;
};

struct Net {
  Dense fc1;
  std::vector<Dense> hidden;
  std::optional<Dense> head;
  std::array<Dense, 2> pair;
  std::variant<Dense, Identity> choice;
  kindling::Buffer<CountingParameter> running_mean;
  std::string label;
};

struct DenseRecord;
struct IdentityRecord;
struct NetRecord;

// A lazy Dense layer of [out, in] weights and an optional [out] bias.
inline Dense MakeDense(int64_t in, int64_t out, bool bias = true,
                       int device = 0) {
  Dense dense{kindling::testing::LazyCountingParam({out, in}, device),
              std::nullopt, in};
  if (bias) dense.bias = kindling::testing::LazyCountingParam({out}, device);
  return dense;
}

inline Net MakeNet() {
  return Net{
      .fc1 = MakeDense(4, 8),
      .hidden = {MakeDense(8, 8), MakeDense(8, 8, /*bias=*/false)},
      .head = MakeDense(8, 2),
      .pair = {MakeDense(2, 2), MakeDense(2, 2)},
      .choice = Identity{3},
      .running_mean = kindling::Buffer<CountingParameter>(
          CountingParameter({8}, 0.0f, 0, false)),
      .label = "net",
  };
}

}  // namespace demo

namespace kindling {

template <>
struct ModuleTraits<::demo::Dense> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Dense";
  using Record = ::demo::DenseRecord;

  template <class Self, class Fn>
  static void ForEachField(Self& module, Fn&& fn) {
    fn("weight", module.weight);
    fn("bias", module.bias);
  }
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
                                     Fn&& fn) {
    fn("weight", module.weight, record.weight);
    fn("bias", module.bias, record.bias);
  }
  template <class Fn>
  static void ForEachConstant(const ::demo::Dense& module, Fn&& fn) {
    fn("in_features", module.in_features);
  }
};

template <>
struct ModuleTraits<::demo::Identity> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Identity";
  using Record = ::demo::IdentityRecord;

  template <class Self, class Fn>
  static void ForEachField(Self&, Fn&&) {}
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self&, RecordSelf&, Fn&&) {}
  template <class Fn>
  static void ForEachConstant(const ::demo::Identity& module, Fn&& fn) {
    fn("width", module.width);
  }
};

template <>
struct ModuleTraits<::demo::Net> {
  static constexpr bool kIsModule = true;
  static constexpr const char* kTypeName = "demo::Net";
  using Record = ::demo::NetRecord;

  template <class Self, class Fn>
  static void ForEachField(Self& module, Fn&& fn) {
    fn("fc1", module.fc1);
    fn("hidden", module.hidden);
    fn("head", module.head);
    fn("pair", module.pair);
    fn("choice", module.choice);
    fn("running_mean", module.running_mean);
  }
  template <class Self, class RecordSelf, class Fn>
  static void ForEachFieldWithRecord(Self& module, RecordSelf& record,
                                     Fn&& fn) {
    fn("fc1", module.fc1, record.fc1);
    fn("hidden", module.hidden, record.hidden);
    fn("head", module.head, record.head);
    fn("pair", module.pair, record.pair);
    fn("choice", module.choice, record.choice);
    fn("running_mean", module.running_mean, record.running_mean);
  }
  template <class Fn>
  static void ForEachConstant(const ::demo::Net&, Fn&&) {}
};

}  // namespace kindling

namespace demo {

// Records come after every ModuleTraits specialization: RecordOf<Dense> needs
// ModuleTraits<Dense> complete.
struct DenseRecord {
  kindling::RecordOf<CountingParam> weight;
  kindling::RecordOf<std::optional<CountingParam>> bias;
};
struct IdentityRecord {};
struct NetRecord {
  kindling::RecordOf<Dense> fc1;
  kindling::RecordOf<std::vector<Dense>> hidden;
  kindling::RecordOf<std::optional<Dense>> head;
  kindling::RecordOf<std::array<Dense, 2>> pair;
  kindling::RecordOf<std::variant<Dense, Identity>> choice;
  kindling::RecordOf<kindling::Buffer<CountingParameter>> running_mean;
};

}  // namespace demo

#endif  // KINDLING_TESTS_MODULE_TEST_MODULES_H_
