// Grad mode: whether ops record the autodiff graph, per thread.
//
// Recording costs a node allocation per op whose input requires grad.
// Inference, optimizer updates and the backward pass itself need no graph, so
// they run inside a NoGradGuard: ops then give results without autodiff
// metadata, exactly as if no input required grad.
//
//   {
//     kindling::NoGradGuard no_grad;
//     Tensor<2> logits = model.Forward(x);  // records nothing
//   }
//
// Thread safety: the mode is thread-local; a guard changes only the thread
// that created it (a worker thread starts with grad mode on).
#ifndef KINDLING_TENSOR_GRAD_MODE_H_
#define KINDLING_TENSOR_GRAD_MODE_H_

namespace kindling {

// IsGradEnabled() is true when ops on this thread record the graph (the
// default).
bool IsGradEnabled();

// GradModeGuard sets this thread's grad mode for its lifetime and restores
// the previous mode on destruction. Guards nest.
class GradModeGuard {
 public:
  explicit GradModeGuard(bool enabled);
  ~GradModeGuard();
  GradModeGuard(const GradModeGuard&) = delete;
  GradModeGuard& operator=(const GradModeGuard&) = delete;

 private:
  bool previous_;
};

// NoGradGuard turns recording off for its lifetime (torch.no_grad()).
class NoGradGuard : public GradModeGuard {
 public:
  NoGradGuard() : GradModeGuard(false) {}
};

}  // namespace kindling

#endif  // KINDLING_TENSOR_GRAD_MODE_H_
