"""kindling_module_library: a cc_library whose headers get generated module code.

In your own workspace (see docs/use-in-your-project.md):

    load("@kindling//codegen:defs.bzl", "kindling_module_library")

    kindling_module_library(
        name = "mlp",
        hdrs = ["mlp.h"],
        deps = ["@kindling//:kindling"],
    )

Inside Kindling the same call reads `load("//codegen:defs.bzl", ...)` with
deps such as "//runtime/kindling/nn:modules".

For every header in `hdrs`, kindling-gen runs as a Bazel action and writes
`<header>.kindling.h` next to it (in the package's output directory, so it is
included as `#include "<package>/mlp.kindling.h"`, the same way as the header).
The generator parses the header with the include paths and defines of the
deps' CcInfo, so it sees exactly what the compiler will. The resulting
cc_library exports the headers, the generated headers and the module runtime.

Every label here is a Label(), so it names Kindling's own targets from any
workspace.
"""

load(
    ":include_paths.bzl",
    "HEADER_EXTENSIONS",
    "generated_include",
    "generated_name",
    "include_path",
    "spelled_include",
)

# The module runtime every generated header includes.
_MODULE_RUNTIME = [
    Label("//runtime/kindling/module:module_traits"),
    Label("//runtime/kindling/module:record"),
]

# The library's copts that change what a header means; the generator parses
# with them too (gcc-only flags would not parse).
_GENERATOR_COPT_PREFIXES = ["-D", "-U", "-I", "-iquote", "-isystem", "-std="]

def _check(ctx, result):
    if result.error:
        fail("%s: %s" % (ctx.label, result.error))
    return result.path

def _spelled_include(ctx, header):
    """How the library's users include `header`."""
    return _check(ctx, spelled_include(
        ctx.label.package,
        include_path(header.short_path),
        ctx.attr.strip_include_prefix,
        ctx.attr.include_prefix,
    ))

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
    # Clang's builtin headers are kindling-gen's business: it finds those of
    # the Clang it links (codegen/clang_resource_dir.h).
    flags = [
        "-std=c++20",
        "-xc++-header",
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
        header.short_path: generated_include(_spelled_include(ctx, header))
        for header in ctx.files.hdrs
    }
    outputs = []
    for header in ctx.files.hdrs:
        output = ctx.actions.declare_file(_check(ctx, generated_name(
            ctx.label.package,
            include_path(header.short_path),
        )))
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
            allow_files = HEADER_EXTENSIONS,
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
            default = Label("//codegen:kindling-gen"),
            executable = True,
            cfg = "exec",
        ),
    },
)

def _check_headers(name, hdrs, strip_include_prefix, include_prefix):
    """Fails, naming the target, for a header in `hdrs` the rule cannot place.

    The rule checks again at analysis; checking here first puts this message
    before Bazel's own from the cc_library (which names an internal target).
    Entries that are not header file names (a rule's label) are left to it.
    """
    if type(hdrs) != type([]):
        return
    package = native.package_name()
    for header in hdrs:
        if type(header) != type(""):
            continue
        if header.startswith("@") or header.startswith("//"):
            if header.startswith("@"):
                continue
            other_package, _, file_name = header[2:].partition(":")
            path = other_package + "/" + file_name if other_package else file_name
        else:
            path = header[1:] if header.startswith(":") else header
            if package:
                path = package + "/" + path
        if not [extension for extension in HEADER_EXTENSIONS if path.endswith(extension)]:
            continue
        for result in [
            generated_name(package, path),
            spelled_include(package, path, strip_include_prefix or "", include_prefix or ""),
        ]:
            if result.error:
                fail("//%s:%s: %s" % (package, name, result.error))

def kindling_module_library(name, hdrs, srcs = [], deps = [], **kwargs):
    """A cc_library of module headers plus the module code generated from them.

    Args:
      name: the cc_library's name; the generator target is `<name>_kindling_gen`.
      hdrs: headers that define KINDLING_MODULE structs (and anything else),
        all in this package.
      srcs: the library's sources, as for cc_library.
      deps: what the headers need, as for cc_library; the module runtime is
        added. "@kindling//:kindling" gives all of Kindling.
      **kwargs: passed to cc_library (visibility, copts, testonly, ...).
        include_prefix, strip_include_prefix and includes apply to the
        generated headers and the generator's parse too (runtime/kindling/nn's
        "kindling/nn/linear.kindling.h"), as do the defines, local_defines and
        the -D/-U/-I/-isystem/-iquote/-std= flags in copts.
        `kindling_gen_copts` adds Clang flags for the generator only.
    """
    # The library's own defines and include flags reach its compile actions,
    # so the parse sees them too.
    gen_copts = ["-D" + define for define in kwargs.get("defines", []) + kwargs.get("local_defines", [])]
    copts = kwargs.get("copts", [])
    if type(copts) == type([]):
        gen_copts += [
            copt
            for copt in copts
            if [prefix for prefix in _GENERATOR_COPT_PREFIXES if copt.startswith(prefix)]
        ]
    gen_copts += kwargs.pop("kindling_gen_copts", [])
    include_prefix = kwargs.pop("include_prefix", None)
    strip_include_prefix = kwargs.pop("strip_include_prefix", None)
    includes = kwargs.pop("includes", [])
    _check_headers(name, hdrs, strip_include_prefix, include_prefix)

    # A dep the caller names already is not added twice (Bazel rejects
    # duplicates); the runtime's labels print as the caller spells them when
    # written in full ("@kindling//runtime/kindling/module:record").
    spelled_deps = [str(dep) for dep in deps] if type(deps) == type([]) else []
    all_deps = deps + [dep for dep in _MODULE_RUNTIME if str(dep) not in spelled_deps]
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
        includes = includes,
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
        includes = includes,
        **kwargs
    )
