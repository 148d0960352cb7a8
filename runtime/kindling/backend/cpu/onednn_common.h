// What Kindling's oneDNN paths (onednn_conv2d.h, onednn_gemm.h) share: the
// KINDLING_ONEDNN switch, the CPU engine, primitive attributes that keep
// oneDNN's scratch memory with the caller, and the signal guard its
// generated sgemm needs.
#ifndef KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_
#define KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_

#include <signal.h>

#include "oneapi/dnnl/dnnl.hpp"

namespace kindling::cpu {

// KINDLING_ONEDNN in the environment, read once: "0" turns every oneDNN
// path off (kOff), to compare or to rule oneDNN out; "all" also takes the
// shapes Kindling's own kernels measured faster on (kAll); unset or
// anything else is kMeasured.
enum class OneDnnMode { kOff, kMeasured, kAll };
OneDnnMode GetOneDnnMode();

// OneDnnEngine() is the process's oneDNN CPU engine.
dnnl::engine& OneDnnEngine();

// OneDnnUserScratchpad() is an attribute with the scratchpad in user mode:
// every primitive takes its scratch memory from its caller, so primitives
// running at once on different threads never share oneDNN's.
dnnl::primitive_attr OneDnnUserScratchpad();

// SignalsDeferred: while one lives, the calling thread takes no
// asynchronous signal (SIGTERM, SIGINT, SIGUSR1, a profiler's SIGPROF, ...):
// a signal sent to the process goes to another thread, one sent to this
// thread waits until the guard ends. oneDNN 2.6's generated sgemm kernels
// (its "gemm:jit" matmul, and the convolutions built on that sgemm) point
// the stack pointer into their heap workspace while they run, so a handler
// run there writes its frame into the heap (oneDNN issue #4845, fixed
// upstream after 3.11): a quickstart stopped by SIGTERM crashed in free()
// about every other time (onednn_signal_test reproduces it). Synchronous
// signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT) stay
// unblocked so a fault still reports. Costs two pthread_sigmask calls
// (0.33 us here); guards nest, and only the outermost one on a thread
// changes the mask, so a caller running many small GEMMs in a row opens one
// around them all (the fused attention's tiles make about 1800 products per
// char-LM block and step).
class SignalsDeferred {
 public:
  SignalsDeferred();
  ~SignalsDeferred();
  SignalsDeferred(const SignalsDeferred&) = delete;
  SignalsDeferred& operator=(const SignalsDeferred&) = delete;

 private:
  sigset_t previous_;
};

// OneDnnOnOneThread: while one lives, the oneDNN primitives the calling
// thread creates or runs use one thread (its OpenMP setting, restored when
// the guard ends). Kindling's pool owns the cores and gives each thread its
// own slab, so oneDNN must never start OpenMP threads of its own. Running
// under the guard is not enough: oneDNN 2.6 sizes some primitives' thread
// teams when they are created (its blocked convolutions keep
// omp_get_max_threads() of that moment) and starts an OpenMP team of that
// size on every call. With plans built outside the guard, each of the two
// slabs of a CNN step started a team of two, four threads on two cores, and
// OpenMP's two workers had taken 1.2 s of CPU each 5 s into an epoch.
class OneDnnOnOneThread {
 public:
  OneDnnOnOneThread();
  ~OneDnnOnOneThread();
  OneDnnOnOneThread(const OneDnnOnOneThread&) = delete;
  OneDnnOnOneThread& operator=(const OneDnnOnOneThread&) = delete;

 private:
  int threads_;
};

// UsesGeneratedSgemm() is whether a primitive runs oneDNN's generated sgemm
// (its implementation name starts with "gemm"), so must run under
// SignalsDeferred.
bool UsesGeneratedSgemm(const dnnl::primitive_desc_base& desc);

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_
