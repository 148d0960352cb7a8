// What Kindling's oneDNN paths (onednn_conv2d.h, onednn_gemm.h) share: the
// KINDLING_ONEDNN switch, the CPU engine, and primitive attributes that keep
// oneDNN's scratch memory with the caller.
#ifndef KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_
#define KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_

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

}  // namespace kindling::cpu

#endif  // KINDLING_BACKEND_CPU_ONEDNN_COMMON_H_
