// Type-erased parameter walks, for code that works on any model without being
// a template over it: optimizers (state keyed by ParamId), checkpoint writers,
// gradient clipping, parameter statistics.
//
//   kindling::VisitParamsErased(model, [&](const kindling::ParamView& param) {
//     std::cout << param.path() << " " << param.lazy_shape() << "\n";
//   });
//
//   model = kindling::MapParamsErased(
//       model, [&](const kindling::ParamView& param) ->
//       std::optional<TensorBase> {
//         return param.value().To(DType::kBF16);  // or nullopt: keep as is
//       });
//
// The templated VisitParams/MapParams (visit.h, map.h) cost nothing per call;
// these cost one indirect call per parameter. Both walk the same tree in the
// same order with the same paths.
#ifndef KINDLING_MODULE_ERASED_H_
#define KINDLING_MODULE_ERASED_H_

#include <optional>
#include <string_view>
#include <utility>

#include "absl/functional/function_ref.h"
#include "kindling/core/check.h"
#include "kindling/core/param.h"
#include "kindling/core/param_id.h"
#include "kindling/module/field_kinds.h"
#include "kindling/module/module_traits.h"
#include "kindling/module/walk.h"
#include "kindling/tensor/device.h"
#include "kindling/tensor/shape.h"
#include "kindling/tensor/tensor.h"

namespace kindling {

// ParamView: one Param<Tensor<D, K>> seen without its rank and kind. Valid
// only during the callback that receives it.
class ParamView {
 public:
  virtual ~ParamView() = default;

  std::string_view path() const { return path_; }
  virtual ParamId id() const = 0;
  virtual int rank() const = 0;
  virtual Shape lazy_shape() const = 0;
  virtual Device lazy_device() const = 0;
  virtual bool lazy_is_require_grad() const = 0;
  virtual bool is_initialized() const = 0;
  // value() returns the value, initializing a lazy param.
  virtual TensorBase value() const = 0;

 protected:
  explicit ParamView(std::string_view path) : path_(path) {}

 private:
  std::string_view path_;
};

namespace module_internal {

template <int D, TensorKind K>
class TypedParamView final : public ParamView {
 public:
  TypedParamView(std::string_view path, const Param<Tensor<D, K>>& param)
      : ParamView(path), param_(param) {}

  ParamId id() const override { return param_.id(); }
  int rank() const override { return D; }
  Shape lazy_shape() const override { return param_.lazy_shape(); }
  Device lazy_device() const override { return param_.lazy_device(); }
  bool lazy_is_require_grad() const override {
    return param_.lazy_is_require_grad();
  }
  bool is_initialized() const override { return param_.is_initialized(); }
  TensorBase value() const override { return param_.val().base(); }

 private:
  const Param<Tensor<D, K>>& param_;
};

template <class P>
struct TensorParamTraits : std::false_type {};
template <int D, TensorKind K>
struct TensorParamTraits<Param<Tensor<D, K>>> : std::true_type {
  static constexpr int kRank = D;
  using Kind = K;
};

}  // namespace module_internal

// VisitParamsErased() calls fn(view) for every Param<Tensor<...>>, in
// declaration order.
template <Module M>
void VisitParamsErased(const M& module,
                       absl::FunctionRef<void(const ParamView&)> fn) {
  ForEachLeaf(module, [&](std::string_view path, const auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (module_internal::TensorParamTraits<Leaf>::value) {
      using Traits = module_internal::TensorParamTraits<Leaf>;
      fn(module_internal::TypedParamView<Traits::kRank, typename Traits::Kind>(
          path, leaf));
    }
  });
}

// MapParamsErased() returns a copy of `module` in which each Param whose
// callback returns a tensor holds that tensor (same id and mapper); nullopt
// keeps the param as it is. A returned tensor must have the param's rank.
template <Module M>
[[nodiscard]] M MapParamsErased(
    const M& module,
    absl::FunctionRef<std::optional<TensorBase>(const ParamView&)> fn) {
  M result = module;
  ForEachLeaf(result, [&](std::string_view path, auto& leaf) {
    using Leaf = std::remove_cvref_t<decltype(leaf)>;
    if constexpr (module_internal::TensorParamTraits<Leaf>::value) {
      using Traits = module_internal::TensorParamTraits<Leaf>;
      std::optional<TensorBase> replacement = fn(
          module_internal::TypedParamView<Traits::kRank, typename Traits::Kind>(
              path, leaf));
      if (!replacement.has_value()) return;
      KINDLING_CHECK(replacement->rank() == Traits::kRank,
                     "MapParamsErased: %s is rank %d, the callback returned "
                     "rank %d",
                     std::string(path), Traits::kRank, replacement->rank());
      leaf = leaf.with_value(Tensor<Traits::kRank, typename Traits::Kind>(
          std::move(*replacement)));
    }
  });
  return result;
}

}  // namespace kindling

#endif  // KINDLING_MODULE_ERASED_H_
