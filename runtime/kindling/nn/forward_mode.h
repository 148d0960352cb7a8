// ForwardMode: the one way every Kindling layer is told whether it is
// training.
//
// Layers whose forward differs between training and inference (Dropout,
// BatchNorm) take a ForwardMode argument with no default; the others take
// none. A model's own Forward passes its mode down:
//
//   Tensor<2> Forward(const Tensor<2>& x, nn::ForwardMode mode,
//                     PhiloxGenerator& generator) const {
//     Tensor<2> h = dropout.Forward(fc1.Forward(x).relu(), mode, generator);
//     return fc2.Forward(norm.Forward(h, mode));
//   }
//
// Why an argument and not module state (PyTorch's train()/eval()) or a
// thread-local scope: Kindling modules are plain, const-forwarded structs
// that are forked to worker threads, so a flag stored in them would have to
// be set on every copy, and a thread-local would silently be "inference" on
// any thread that forgot to open the scope. An argument without a default
// turns "forgot to say" into a compile error at the call that forgot, is
// visible in every signature that depends on it, and costs nothing at
// inference. (Burn infers training from the autodiff backend type; Kindling's
// autodiff is a property of tensors, not of the backend, so that signal does
// not exist here.)
#ifndef KINDLING_NN_FORWARD_MODE_H_
#define KINDLING_NN_FORWARD_MODE_H_

#include <ostream>

namespace kindling::nn {

// ForwardMode::kTraining: dropout drops, batch norm uses and updates batch
// statistics. kInference: dropout is the identity, batch norm uses its
// running statistics.
enum class ForwardMode { kTraining, kInference };

inline std::ostream& operator<<(std::ostream& os, ForwardMode mode) {
  return os << (mode == ForwardMode::kTraining ? "training" : "inference");
}

}  // namespace kindling::nn

#endif  // KINDLING_NN_FORWARD_MODE_H_
