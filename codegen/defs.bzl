"""kindling_module_library: a cc_library whose headers get generated module code.

    load("//codegen:defs.bzl", "kindling_module_library")

    kindling_module_library(
        name = "mlp",
        hdrs = ["mlp.h"],
        deps = ["//runtime/kindling/nn:linear"],
    )

For every header in `hdrs`, kindling-gen runs as a Bazel action and writes
`<header>.kindling.h` next to it (in the package's output directory, so it is
included as `#include "<package>/mlp.kindling.h"`, the same way as the header).
The generator parses the header with the include paths and defines of the
deps' CcInfo, so it sees exactly what the compiler will. The resulting
cc_library exports the headers, the generated headers and the module runtime.
"""

# The module runtime every generated header includes.
_MODULE_RUNTIME = [
    "//runtime/kindling/module:module_traits",
    "//runtime/kindling/module:record",
]

# Builtin headers (stddef.h, ...) of the Clang that kindling-gen links.
_CLANG_RESOURCE_DIR = "/usr/lib/llvm-14/lib/clang/14.0.6"

_HEADER_EXTENSIONS = [".h", ".hh", ".hpp", ".hxx"]

def _include_path(file):
    """How `#include "..."` names a source or generated file."""
    path = file.short_path
    if path.startswith("../"):
        # A file of an external repository: ../<repo>/<path>.
        path = path.split("/", 2)[2]
    return path

def _spelled_include(ctx, header):
    """How the library's users include `header`, after the cc_library's
    strip_include_prefix and include_prefix."""
    path = _include_path(header)
    strip = ctx.attr.strip_include_prefix
    if strip:
        if strip.startswith("/"):
            strip = strip[1:]
        elif ctx.label.package:
            strip = ctx.label.package + "/" + strip
        strip = strip.rstrip("/")
        if strip:
            if not path.startswith(strip + "/"):
                fail("%s: header %s is not under strip_include_prefix %s" % (ctx.label, path, strip))
            path = path[len(strip) + 1:]
    elif ctx.attr.include_prefix and ctx.label.package:
        # cc_library strips the package when only include_prefix is given.
        path = path[len(ctx.label.package) + 1:]
    if ctx.attr.include_prefix:
        path = ctx.attr.include_prefix.rstrip("/") + "/" + path
    return path

def _generated_include(path):
    """examples/mlp.h -> examples/mlp.kindling.h"""
    for extension in _HEADER_EXTENSIONS:
        if path.endswith(extension):
            return path[:-len(extension)] + ".kindling.h"
    return path + ".kindling.h"

def _generated_name(ctx, header):
    """The generated file's path relative to the package: foo/x.h -> foo/x.kindling.h."""
    package = ctx.label.package
    path = _include_path(header)
    if package:
        if not path.startswith(package + "/"):
            fail("%s: header %s is not in package %s" % (ctx.label, path, package))
        path = path[len(package) + 1:]
    for extension in _HEADER_EXTENSIONS:
        if path.endswith(extension):
            return path[:-len(extension)] + ".kindling.h"
    fail("%s: %s is not a header (%s)" % (ctx.label, path, ", ".join(_HEADER_EXTENSIONS)))

def runfiles_path(bin_dir_path, path):
    """Maps an exec-root path (from CcInfo) to its place in a runfiles tree,
    for tests that run a compiler on the headers of their deps."""
    if path == bin_dir_path:
        return "."
    if path.startswith(bin_dir_path + "/"):
        return path[len(bin_dir_path) + 1:]
    if path.startswith("external/"):
        return "../" + path[len("external/"):]
    return path

def kindling_compiler_flags(compilation_context, bin_dir_path, copts = []):
    """The flags kindling-gen passes to Clang after `--`.

    Args:
      compilation_context: the merged CcCompilationContext of the deps.
      bin_dir_path: the configuration's output directory (for generated headers).
      copts: extra flags, last so that they win.

    Returns:
      A list of strings.
    """
    flags = [
        "-std=c++20",
        "-xc++-header",
        "-resource-dir=" + _CLANG_RESOURCE_DIR,
        # Headers include each other from the repository root, source or
        # generated, as the C++ compile actions do.
        "-iquote",
        ".",
        "-iquote",
        bin_dir_path,
    ]
    for define in compilation_context.defines.to_list():
        flags.append("-D" + define)
    for path in compilation_context.quote_includes.to_list():
        flags += ["-iquote", path]
    for path in compilation_context.includes.to_list():
        flags += ["-I", path]
    for path in compilation_context.system_includes.to_list():
        flags += ["-isystem", path]
    for path in compilation_context.framework_includes.to_list():
        flags.append("-F" + path)
    return flags + copts

def _kindling_gen_impl(ctx):
    compilation_context = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context
    flags = kindling_compiler_flags(compilation_context, ctx.bin_dir.path, ctx.attr.copts)
    inputs = depset(
        ctx.files.hdrs + ctx.files.srcs,
        transitive = [compilation_context.headers],
    )
    # Each header's generated file, as the library's users include it.
    generated_includes = {
        header.short_path: _generated_include(_spelled_include(ctx, header))
        for header in ctx.files.hdrs
    }
    outputs = []
    for header in ctx.files.hdrs:
        output = ctx.actions.declare_file(_generated_name(ctx, header))
        outputs.append(output)
        args = ctx.actions.args()
        args.add(header.path)
        args.add("-o", output.path)
        args.add("--include=" + _spelled_include(ctx, header))
        for other, include in generated_includes.items():
            if other != header.short_path:
                args.add("--sibling=" + include)
        args.add("--")
        args.add_all(flags)
        ctx.actions.run(
            executable = ctx.executable._generator,
            arguments = [args],
            inputs = inputs,
            outputs = [output],
            mnemonic = "KindlingGen",
            progress_message = "Generating module code for %s" % header.short_path,
        )
    return [DefaultInfo(
        files = depset(outputs),
        runfiles = ctx.runfiles(files = outputs),
    )]

kindling_gen = rule(
    implementation = _kindling_gen_impl,
    doc = "Runs kindling-gen on each header; the outputs are the .kindling.h files.",
    attrs = {
        "hdrs": attr.label_list(
            allow_files = _HEADER_EXTENSIONS,
            doc = "Headers to generate module code for, in this package.",
        ),
        "srcs": attr.label_list(
            allow_files = True,
            doc = "Other files the headers may include (the library's srcs).",
        ),
        "deps": attr.label_list(
            providers = [CcInfo],
            doc = "Libraries whose include paths, defines and headers the parse uses.",
        ),
        "copts": attr.string_list(
            doc = "Extra Clang flags, after those from deps.",
        ),
        "include_prefix": attr.string(
            doc = "As for the cc_library: how its headers are included.",
        ),
        "strip_include_prefix": attr.string(
            doc = "As for the cc_library: how its headers are included.",
        ),
        "_generator": attr.label(
            default = "//codegen:kindling-gen",
            executable = True,
            cfg = "exec",
        ),
    },
)

def kindling_module_library(name, hdrs, srcs = [], deps = [], **kwargs):
    """A cc_library of module headers plus the module code generated from them.

    Args:
      name: the cc_library's name; the generator target is `<name>_kindling_gen`.
      hdrs: headers that define KINDLING_MODULE structs (and anything else).
      srcs: the library's sources, as for cc_library.
      deps: what the headers need, as for cc_library; the module runtime is added.
      **kwargs: passed to cc_library (visibility, copts, testonly, ...).
        include_prefix and strip_include_prefix apply to the generated
        headers too (runtime/kindling/nn's "kindling/nn/linear.kindling.h").
        `kindling_gen_copts` adds Clang flags for the generator only.
    """
    # The library's own defines reach its compile actions, so the parse sees
    # them too.
    gen_copts = ["-D" + define for define in kwargs.get("defines", []) + kwargs.get("local_defines", [])]
    gen_copts += kwargs.pop("kindling_gen_copts", [])
    include_prefix = kwargs.pop("include_prefix", None)
    strip_include_prefix = kwargs.pop("strip_include_prefix", None)
    all_deps = deps + [dep for dep in _MODULE_RUNTIME if dep not in deps]
    testonly = kwargs.get("testonly", False)

    # The headers alone, as their library's users see them: the generator
    # parses with this library's own include paths too, so headers that
    # include each other through include_prefix resolve.
    headers = name + "_kindling_headers"
    native.cc_library(
        name = headers,
        hdrs = hdrs,
        deps = all_deps,
        include_prefix = include_prefix,
        strip_include_prefix = strip_include_prefix,
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    generated = name + "_kindling_gen"
    kindling_gen(
        name = generated,
        hdrs = hdrs,
        srcs = srcs,
        deps = [":" + headers],
        copts = gen_copts,
        include_prefix = include_prefix or "",
        strip_include_prefix = strip_include_prefix or "",
        testonly = testonly,
        visibility = ["//visibility:private"],
    )
    native.cc_library(
        name = name,
        hdrs = hdrs + [":" + generated],
        srcs = srcs,
        deps = all_deps,
        include_prefix = include_prefix,
        strip_include_prefix = strip_include_prefix,
        **kwargs
    )
