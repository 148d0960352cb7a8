"""kindling_cuda_library: CUDA sources compiled by nvcc into a cc_library.

Kindling's own small rule rather than a downloaded rules_cuda (the build is
offline). The .cu files of a library are compiled by /usr/local/cuda/bin/nvcc
(gcc from the C++ toolchain as host compiler) into one static archive; the
.cc files and headers go through an ordinary cc_library that links it, so
everything else in the tree depends on a CUDA library like on any other:

    kindling_cuda_library(
        name = "kernels",
        srcs = ["add.cu", "launch.cc"],
        hdrs = ["kernels.h"],
        deps = ["//runtime/kindling/core:check"],
    )

nvcc sees the include paths, defines and headers of `deps` (from their
CcInfo), so a .cu file includes "kindling/..." and absl headers as a .cc file
does, plus the library's own headers as "kindling/<layer>/<file>.h".

Gating: every target the macros create builds only under --config=cuda
(--define=kindling_cuda=1). Without it they are incompatible with the target
platform, so `bazel build //...` and `bazel test //...` skip them and never
run nvcc nor read /usr/local/cuda; naming one explicitly says why it is
skipped. Their deps on the toolkit are select()ed away as well.

Link order: the .cu archive is a dependency of the library's .cc code, so .cc
code may call into .cu code but not the other way round (split such helpers
into a library of their own).
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//runtime:defs.bzl", "KINDLING_COPTS", "kindling_cc_test")

CUDA_ROOT = "/usr/local/cuda"
NVCC = CUDA_ROOT + "/bin/nvcc"

# Ampere (A100) and Hopper (H100) machine code, plus sm_90 PTX so newer GPUs
# can JIT the kernels instead of failing to load them.
CUDA_GENCODE = [
    "--generate-code=arch=compute_80,code=sm_80",
    "--generate-code=arch=compute_90,code=[sm_90,compute_90]",
]

CUDA_NVCC_COPTS = [
    "-std=c++20",
    "-O3",
    # constexpr host functions (std::numeric_limits, our constexpr helpers)
    # callable from device code.
    "--expt-relaxed-constexpr",
    # Objects go into archives linked into tests and, possibly, shared
    # libraries.
    "-Xcompiler=-fPIC",
    "-Xcompiler=" + ",".join(KINDLING_COPTS),
] + CUDA_GENCODE

# --config=cuda, as a select() key. Bazel 4.2.3's select() takes only label
# strings; the Label makes it Kindling's setting from any repository.
_CUDA_ENABLED = str(Label("//third_party/cuda:enabled"))

# The constraint no platform has: a target requiring it is skipped.
CUDA_ONLY = select({
    _CUDA_ENABLED: [],
    "//conditions:default": [Label("//third_party/cuda:requires_config_cuda")],
})

def _cuda_enabled(value):
    return select({
        _CUDA_ENABLED: value,
        "//conditions:default": [],
    })

def _unique(items):
    seen = {}
    for item in items:
        seen[item] = True
    return seen.keys()

def _include_flags(compilation_context):
    flags = []
    for define in compilation_context.defines.to_list():
        flags.append("-D" + define)
    for path in compilation_context.includes.to_list():
        flags.append("-I" + path)
    # nvcc has no -iquote; a quote include directory works as well with -I.
    for path in compilation_context.quote_includes.to_list():
        flags.append("-I" + path)
    for path in compilation_context.system_includes.to_list():
        flags.append("-isystem=" + path)
    return flags

def _cuda_archive_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    contexts = [dep[CcInfo].compilation_context for dep in ctx.attr.deps]
    headers = depset(
        ctx.files.hdrs,
        transitive = [context.headers for context in contexts],
    )

    # The library's own headers resolve from the include root (e.g.
    # "runtime" for "kindling/..."), in the source and the output trees, under
    # external/<repo> when Kindling is another workspace's @kindling.
    repository_root = ctx.label.workspace_root
    output_root = ctx.bin_dir.path + ("/" + repository_root if repository_root else "")
    flags = ["-I" + (repository_root or "."), "-I" + output_root]
    for root in ctx.attr.include_roots:
        source_include = repository_root + "/" + root if repository_root else root
        flags += ["-I" + source_include, "-I" + output_root + "/" + root]
    for context in contexts:
        flags += _include_flags(context)
    flags = _unique(flags)
    if ctx.var["COMPILATION_MODE"] == "opt":
        flags.append("-DNDEBUG")
    elif ctx.var["COMPILATION_MODE"] == "dbg":
        flags += ["-g", "-lineinfo"]

    objects = []
    for src in ctx.files.srcs:
        obj = ctx.actions.declare_file(
            "_cuda_objs/%s/%s.o" % (ctx.label.name, src.basename),
        )
        args = ctx.actions.args()
        args.add("-ccbin", cc_toolchain.compiler_executable)
        args.add_all(CUDA_NVCC_COPTS)
        args.add_all(ctx.attr.copts)
        args.add_all(flags)
        args.add("-c", src)
        args.add("-o", obj)
        ctx.actions.run(
            executable = NVCC,
            arguments = [args],
            inputs = depset([src], transitive = [headers]),
            outputs = [obj],
            mnemonic = "NvccCompile",
            progress_message = "nvcc %s" % src.short_path,
            # nvcc finds its own tools (cudafe++, ptxas) and gcc's through
            # PATH.
            use_default_shell_env = True,
        )
        objects.append(obj)

    # .lo: the archive of an alwayslink library (all members linked).
    suffix = ".lo" if ctx.attr.alwayslink else ".a"
    archive = ctx.actions.declare_file("lib%s%s" % (ctx.label.name, suffix))
    ar_args = ctx.actions.args()
    ar_args.add("rcsD", archive)
    ar_args.add_all(objects)
    ctx.actions.run(
        executable = cc_toolchain.ar_executable,
        arguments = [ar_args],
        inputs = depset(objects, transitive = [cc_toolchain.all_files]),
        outputs = [archive],
        mnemonic = "CudaArchive",
        progress_message = "archiving %s" % archive.short_path,
        use_default_shell_env = True,
    )
    return [DefaultInfo(files = depset([archive]))]

_cuda_archive = rule(
    implementation = _cuda_archive_impl,
    attrs = {
        "srcs": attr.label_list(allow_files = [".cu"]),
        "hdrs": attr.label_list(allow_files = [".h", ".cuh", ".inc"]),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "include_roots": attr.string_list(),
        "alwayslink": attr.bool(),
        "_cc_toolchain": attr.label(
            default = Label("@bazel_tools//tools/cpp:current_cc_toolchain"),
        ),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    fragments = ["cpp"],
)

# Every CUDA library links the runtime and cuBLAS. Nothing else: each library
# linked is one the GPU host must provide (cuRAND, never called, was 132 MB).
CUDA_LIBS = [
    Label("@cuda//:cudart"),
    Label("@cuda//:cublas"),
]

def kindling_cuda_library(
        name,
        srcs = [],
        hdrs = [],
        deps = [],
        copts = [],
        nvcc_copts = [],
        alwayslink = False,
        include_root = "runtime",
        **kwargs):
    """A cc_library whose .cu srcs are compiled by nvcc; built only with --config=cuda.

    Args:
      name: the cc_library's name.
      srcs: .cu files (nvcc) and .cc/.h files (the C++ toolchain).
      hdrs: public headers, included as "kindling/<layer>/<file>.h".
      deps: cc libraries; their headers are visible to nvcc too.
      copts: extra C++ compiler flags for the .cc files.
      nvcc_copts: extra nvcc flags for the .cu files.
      alwayslink: link every object even if unreferenced (registrations).
      include_root: the directory headers are included relative to
        ("runtime": "kindling/..."); "" for the workspace root (tests).
      **kwargs: passed to the cc_library.
    """
    cu_srcs = [src for src in srcs if src.endswith(".cu")]
    cc_srcs = [src for src in srcs if not src.endswith(".cu")]
    private_hdrs = [src for src in cc_srcs if src.endswith((".h", ".cuh"))]
    lib_deps = list(deps)
    if cu_srcs:
        _cuda_archive(
            name = name + "_nvcc",
            srcs = cu_srcs,
            hdrs = hdrs + private_hdrs,
            deps = _cuda_enabled(deps + [Label("@cuda//:headers")]),
            copts = nvcc_copts,
            include_roots = [include_root] if include_root else ["."],
            alwayslink = alwayslink,
            target_compatible_with = CUDA_ONLY,
            visibility = ["//visibility:private"],
        )

        # The archive as a library of its own: the .cc code depends on it, so
        # it comes after that code on the link line.
        native.cc_library(
            name = name + "_device_code",
            srcs = [":" + name + "_nvcc"],
            deps = _cuda_enabled(deps + CUDA_LIBS),
            alwayslink = alwayslink,
            linkstatic = True,
            target_compatible_with = CUDA_ONLY,
            visibility = ["//visibility:private"],
        )
        lib_deps.append(":" + name + "_device_code")
    native.cc_library(
        name = name,
        srcs = cc_srcs,
        hdrs = hdrs,
        deps = _cuda_enabled(lib_deps + CUDA_LIBS),
        copts = KINDLING_COPTS + copts,
        strip_include_prefix = "/" + include_root if include_root else None,
        alwayslink = alwayslink,
        target_compatible_with = CUDA_ONLY,
        visibility = kwargs.pop("visibility", ["//visibility:public"]),
        **kwargs
    )

def kindling_cuda_test(name, srcs, deps = [], **kwargs):
    """A GoogleTest built and run only with --config=cuda.

    A test that needs a GPU must GTEST_SKIP() with a clear message when
    CudaDeviceCount() is 0; the CPU-side checks in it still run.
    """
    kindling_cc_test(
        name = name,
        srcs = srcs,
        deps = _cuda_enabled(deps + CUDA_LIBS),
        target_compatible_with = CUDA_ONLY,
        **kwargs
    )
