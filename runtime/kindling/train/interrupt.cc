#include "kindling/train/interrupt.h"

#include <atomic>
#include <csignal>

namespace kindling::train {
namespace {

// Lock-free atomics are async-signal-safe; static_assert'ed below.
std::atomic<bool> interrupted{false};
std::atomic<int> first_signal{0};
static_assert(std::atomic<bool>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int signal) {
  int none = 0;
  first_signal.compare_exchange_strong(none, signal, std::memory_order_relaxed);
  interrupted.store(true, std::memory_order_relaxed);
  // The next Ctrl-C ends the process, for a loop stuck inside a long step.
  // SIGTERM keeps the handler: a scheduler's repeated notice must not kill
  // the checkpoint being written (its SIGKILL after the grace period will).
  if (signal == SIGINT) std::signal(SIGINT, SIG_DFL);
}

}  // namespace

void InstallInterruptHandler() {
  std::signal(SIGINT, OnStopSignal);
  std::signal(SIGTERM, OnStopSignal);
  std::signal(SIGUSR1, OnStopSignal);
}

bool InterruptRequested() {
  return interrupted.load(std::memory_order_relaxed);
}

int InterruptSignal() { return first_signal.load(std::memory_order_relaxed); }

void RequestInterrupt() {
  int none = 0;
  first_signal.compare_exchange_strong(none, SIGINT, std::memory_order_relaxed);
  interrupted.store(true, std::memory_order_relaxed);
}

void ClearInterrupt() {
  interrupted.store(false, std::memory_order_relaxed);
  first_signal.store(0, std::memory_order_relaxed);
  InstallInterruptHandler();
}

}  // namespace kindling::train
