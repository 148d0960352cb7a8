#include "kindling/tensor/grad_mode.h"

namespace kindling {
namespace {

thread_local bool grad_enabled = true;

}  // namespace

bool IsGradEnabled() { return grad_enabled; }

GradModeGuard::GradModeGuard(bool enabled) : previous_(grad_enabled) {
  grad_enabled = enabled;
}

GradModeGuard::~GradModeGuard() { grad_enabled = previous_; }

}  // namespace kindling
