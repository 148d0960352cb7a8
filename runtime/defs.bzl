"""Build helpers shared by every runtime package.

kindling_cc_library puts a runtime header `runtime/kindling/<layer>/<file>.h` on
the include path as `kindling/<layer>/<file>.h` and applies the project's copts, so
BUILD files stay one line per concept.

These macros are for Kindling's own packages; a project that uses Kindling
writes plain cc_library / cc_test rules and kindling_module_library
(//codegen:defs.bzl). Labels are Label()s, so they resolve in Kindling's
repository when it is @kindling.
"""

load("//codegen:defs.bzl", "kindling_module_library")

# -Werror=unused-result makes discarding a [[nodiscard]] value (a Tensor, a
# Status) a compile error rather than a warning. -Werror=switch makes a
# switch over an enum that misses a value (and has no default) an error: a
# row added to the op table (tensor/elementwise_ops.def) without its kernel
# or gradient case does not build.
KINDLING_COPTS = [
    "-Werror=return-type",
    "-Werror=switch",
    "-Werror=unused-result",
]

# The instruction set Kindling's CPU kernels are written for: x86-64-v3
# (AVX2, FMA, F16C; every machine of this kind and the GPU hosts have it).
# Kindling's .bazelrc builds everything for it; the kernels also carry it
# themselves, so a workspace that uses Kindling gets vectorized kernels
# without a flag of its own.
KINDLING_CPU_ISA_COPTS = ["-march=x86-64-v3"]

def kindling_cc_library(name, hdrs = [], srcs = [], deps = [], copts = [], visibility = ["//visibility:public"], **kwargs):
    """A runtime library: public unless `visibility` says otherwise (kernels and
    other internals are visible to Kindling's own packages only)."""
    native.cc_library(
        name = name,
        hdrs = hdrs,
        srcs = srcs,
        deps = deps,
        copts = KINDLING_COPTS + copts,
        strip_include_prefix = "/runtime",
        visibility = visibility,
        **kwargs
    )

def kindling_cc_test(name, srcs, deps = [], copts = [], size = "small", **kwargs):
    native.cc_test(
        name = name,
        size = size,
        srcs = srcs,
        deps = deps + [Label("@googletest//:gtest_main")],
        copts = KINDLING_COPTS + copts,
        **kwargs
    )

def kindling_runtime_module_library(name, hdrs, srcs = [], deps = [], copts = [], **kwargs):
    """kindling_module_library for runtime headers: kindling-gen writes
    `kindling/<layer>/<file>.kindling.h` next to each header."""
    kindling_module_library(
        name = name,
        hdrs = hdrs,
        srcs = srcs,
        deps = deps,
        copts = KINDLING_COPTS + copts,
        strip_include_prefix = "/runtime",
        visibility = ["//visibility:public"],
        **kwargs
    )
