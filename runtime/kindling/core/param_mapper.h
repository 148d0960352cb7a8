// ParamMapper<T>: transformations a Param applies when it is loaded or saved.
//
// A checkpoint may store a parameter in a different form than the model uses
// it: quantized, in another precision, transposed for another framework. The
// mapper carries those conversions with the parameter, so that the generated
// record code and the checkpoint writer apply them without knowing why.
//
//   auto param = kindling::Param<Tensor<2>>::Uninitialized(...)
//                    .load_mapper([](Tensor<2> t) { return t.to_dtype(kF32); })
//                    .save_mapper([](Tensor<2> t) { return t.to_dtype(kBF16);
//                    });
//
// Setting a mapper replaces the previous one of the same direction; it does
// not chain. Copies of a ParamMapper share the functions (a refcount each).
#ifndef KINDLING_CORE_PARAM_MAPPER_H_
#define KINDLING_CORE_PARAM_MAPPER_H_

#include <functional>
#include <memory>
#include <utility>

#include "kindling/core/parameter.h"

namespace kindling {

template <Parameter T>
class ParamMapper {
 public:
  // MapFn must be callable many times and from several threads at once.
  using MapFn = std::function<T(T)>;

  // The default mapper passes values through unchanged.
  ParamMapper() = default;

  // on_load() applies the load transformation, if any.
  T on_load(T value) const {
    return load_ ? (*load_)(std::move(value)) : value;
  }

  // on_save() applies the save transformation, if any.
  T on_save(T value) const {
    return save_ ? (*save_)(std::move(value)) : value;
  }

  bool has_load() const { return load_ != nullptr; }
  bool has_save() const { return save_ != nullptr; }

  // with_load() returns a copy whose load transformation is `load`.
  [[nodiscard]] ParamMapper with_load(MapFn load) const {
    ParamMapper result = *this;
    result.load_ = std::make_shared<const MapFn>(std::move(load));
    return result;
  }

  // with_save() returns a copy whose save transformation is `save`.
  [[nodiscard]] ParamMapper with_save(MapFn save) const {
    ParamMapper result = *this;
    result.save_ = std::make_shared<const MapFn>(std::move(save));
    return result;
  }

 private:
  // Null means "no transformation"; a null shared_ptr copies without touching
  // an atomic refcount, which keeps copying a mapper-less Param cheap.
  std::shared_ptr<const MapFn> load_;
  std::shared_ptr<const MapFn> save_;
};

}  // namespace kindling

#endif  // KINDLING_CORE_PARAM_MAPPER_H_
