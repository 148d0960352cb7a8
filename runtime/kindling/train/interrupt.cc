#include "kindling/train/interrupt.h"

#include <atomic>
#include <csignal>

namespace kindling::train {
namespace {

// Lock-free atomics are async-signal-safe; static_assert'ed below.
std::atomic<bool> interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnSigint(int) {
  interrupted.store(true, std::memory_order_relaxed);
  // The next Ctrl-C ends the process, for a loop stuck inside a long step.
  std::signal(SIGINT, SIG_DFL);
}

}  // namespace

void InstallInterruptHandler() { std::signal(SIGINT, OnSigint); }

bool InterruptRequested() {
  return interrupted.load(std::memory_order_relaxed);
}

void RequestInterrupt() { interrupted.store(true, std::memory_order_relaxed); }

void ClearInterrupt() {
  interrupted.store(false, std::memory_order_relaxed);
  InstallInterruptHandler();
}

}  // namespace kindling::train
