"""kindling_gen_diagnostic_test: runs kindling-gen on a header with mistakes.

The test passes when the generator exits with the expected status, writes no
output on failure, and prints exactly the expected `file:line:col: kind: ...`
lines (fatal errors, errors, warnings, notes; the source excerpts and carets
are ignored).
The header is parsed with the include paths of `deps`, as the real rule does.
"""

load("//codegen:defs.bzl", "kindling_compiler_flags", "runfiles_path")

def _shell_quote(text):
    return "'" + text.replace("'", "'\\''") + "'"

def _kindling_gen_diagnostic_test_impl(ctx):
    compilation_context = cc_common.merge_cc_infos(
        cc_infos = [dep[CcInfo] for dep in ctx.attr.deps],
    ).compilation_context
    flags = [
        runfiles_path(ctx.bin_dir.path, flag)
        for flag in kindling_compiler_flags(compilation_context, ctx.bin_dir.path, ctx.attr.copts)
    ] + ["-fno-color-diagnostics"]
    header = ctx.file.header
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        output = script,
        is_executable = True,
        content = """#!/usr/bin/env bash
set -uo pipefail
output="$TEST_TMPDIR/out.kindling.h"
stderr="$TEST_TMPDIR/stderr.txt"
{generator} {header} -o "$output" -- {flags} 2>"$stderr" >/dev/null
status=$?
cat "$stderr"
failed=0
if [[ {should_fail} == 1 ]]; then
  if ((status == 0)); then echo "FAIL: kindling-gen exited 0, expected failure"; failed=1; fi
  if [[ -e $output ]]; then echo "FAIL: kindling-gen wrote $output despite errors"; failed=1; fi
else
  if ((status != 0)); then echo "FAIL: kindling-gen exited $status, expected 0"; failed=1; fi
  if [[ ! -s $output ]]; then echo "FAIL: kindling-gen wrote no output"; failed=1; fi
fi
grep -E '^[^ ]+:[0-9]+:[0-9]+: (fatal error|error|warning|note): ' "$stderr" >"$TEST_TMPDIR/actual.txt"
if ! diff -u {expected} "$TEST_TMPDIR/actual.txt"; then
  echo "FAIL: diagnostics differ (- expected, + actual)"
  failed=1
fi
exit $failed
""".format(
            generator = _shell_quote(ctx.executable._generator.short_path),
            header = _shell_quote(header.short_path),
            flags = " ".join([_shell_quote(flag) for flag in flags]),
            should_fail = 1 if ctx.attr.should_fail else 0,
            expected = _shell_quote(ctx.file.expected.short_path),
        ),
    )
    runfiles = ctx.runfiles(
        files = [header, ctx.file.expected, ctx.executable._generator] + ctx.files.srcs,
        transitive_files = compilation_context.headers,
    )
    return [DefaultInfo(executable = script, runfiles = runfiles)]

kindling_gen_diagnostic_test = rule(
    implementation = _kindling_gen_diagnostic_test_impl,
    test = True,
    attrs = {
        "header": attr.label(allow_single_file = [".h"], mandatory = True),
        "expected": attr.label(allow_single_file = True, mandatory = True),
        "should_fail": attr.bool(default = True),
        "srcs": attr.label_list(allow_files = True, doc = "Headers `header` includes."),
        "deps": attr.label_list(providers = [CcInfo]),
        "copts": attr.string_list(),
        "_generator": attr.label(
            default = Label("//codegen:kindling-gen"),
            executable = True,
            cfg = "exec",
        ),
    },
)
