"""compile_fail_test: a shell test that runs the C++ compiler on purpose.

The test script gets the include flags of `deps` (mapped into its runfiles) in
the environment variable KINDLING_INCLUDE_FLAGS, and every header of `deps` in
its runfiles, so it can compile snippets that are meant to fail and check the
compiler's message.
"""

def _runfiles_path(ctx, path):
    """Maps an exec-root path (from CcInfo) to its place in the runfiles tree."""
    bin_dir = ctx.bin_dir.path
    if path == bin_dir:
        return "."
    if path.startswith(bin_dir + "/"):
        return path[len(bin_dir) + 1:]
    if path.startswith("external/"):
        return "../" + path[len("external/"):]
    return path

def _compile_fail_test_impl(ctx):
    compilation_context = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context
    flags = ["-iquote", "."]
    for path in compilation_context.quote_includes.to_list():
        flags += ["-iquote", _runfiles_path(ctx, path)]
    for path in compilation_context.includes.to_list():
        flags += ["-I", _runfiles_path(ctx, path)]
    for path in compilation_context.system_includes.to_list():
        flags += ["-isystem", _runfiles_path(ctx, path)]
    for define in compilation_context.defines.to_list():
        flags.append("-D" + define)
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
