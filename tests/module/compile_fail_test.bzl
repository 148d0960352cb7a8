"""compile_fail_test: a shell test that runs the C++ compiler on purpose.

The test script gets the include flags of `deps` (mapped into its runfiles) in
the environment variable KINDLING_INCLUDE_FLAGS, and every header of `deps` in
its runfiles, so it can compile snippets that are meant to fail and check the
compiler's message.
"""

load("//codegen:defs.bzl", "kindling_compiler_flags", "runfiles_path")

def _compile_fail_test_impl(ctx):
    compilation_context = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context
    # The flags kindling-gen parses with are plain C++ flags but for the
    # header mode, which g++ does not take.
    flags = [
        runfiles_path(ctx.bin_dir.path, flag)
        for flag in kindling_compiler_flags(compilation_context, ctx.bin_dir.path)
        if flag != "-xc++-header"
    ]
    wrapper = ctx.actions.declare_file(ctx.label.name + "_compiler_env.sh")
    ctx.actions.write(
        output = wrapper,
        is_executable = True,
        content = "#!/usr/bin/env bash\nexport KINDLING_INCLUDE_FLAGS='{flags}'\nexec {script} \"$@\"\n".format(
            flags = " ".join(flags),
            script = ctx.file.script.short_path,
        ),
    )
    runfiles = ctx.runfiles(
        files = [ctx.file.script] + ctx.files.srcs,
        transitive_files = compilation_context.headers,
    )
    return [DefaultInfo(executable = wrapper, runfiles = runfiles)]

compile_fail_test = rule(
    implementation = _compile_fail_test_impl,
    test = True,
    attrs = {
        "script": attr.label(allow_single_file = [".sh"], mandatory = True),
        "srcs": attr.label_list(allow_files = True, doc = "The snippets the script compiles."),
        "deps": attr.label_list(providers = [CcInfo]),
    },
)
