#include "kindling/backend/cpu/onednn_common.h"

#include <omp.h>
#include <pthread.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <string_view>

namespace kindling::cpu {

OneDnnMode GetOneDnnMode() {
  static const OneDnnMode mode = [] {
    const char* value = std::getenv("KINDLING_ONEDNN");
    if (value != nullptr && std::strcmp(value, "0") == 0) {
      return OneDnnMode::kOff;
    }
    if (value != nullptr && std::strcmp(value, "all") == 0) {
      return OneDnnMode::kAll;
    }
    return OneDnnMode::kMeasured;
  }();
  return mode;
}

dnnl::engine& OneDnnEngine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

dnnl::primitive_attr OneDnnUserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

namespace {

// AsynchronousSignals() is every signal but the ones a thread's own fault
// raises (and SIGKILL and SIGSTOP, which cannot be blocked anyway).
const sigset_t& AsynchronousSignals() {
  static const sigset_t set = [] {
    sigset_t all;
    sigfillset(&all);
    for (const int fault :
         {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT}) {
      sigdelset(&all, fault);
    }
    return all;
  }();
  return set;
}

}  // namespace

// How many SignalsDeferred this thread has open: only the outermost changes
// the mask.
thread_local int signals_deferred_depth = 0;

SignalsDeferred::SignalsDeferred() {
  if (signals_deferred_depth++ == 0) {
    pthread_sigmask(SIG_BLOCK, &AsynchronousSignals(), &previous_);
  }
}

SignalsDeferred::~SignalsDeferred() {
  if (--signals_deferred_depth == 0) {
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
}

OneDnnOnOneThread::OneDnnOnOneThread() : threads_(omp_get_max_threads()) {
  omp_set_num_threads(1);  // this thread's OpenMP setting only
}

OneDnnOnOneThread::~OneDnnOnOneThread() { omp_set_num_threads(threads_); }

bool UsesGeneratedSgemm(const dnnl::primitive_desc_base& desc) {
  return std::string_view(desc.impl_info_str()).starts_with("gemm");
}

}  // namespace kindling::cpu
