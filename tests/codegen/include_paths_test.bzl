"""include_paths_test: the path logic of kindling_module_library, unit-tested.

Runs codegen/include_paths.bzl on made-up packages and prefixes at analysis
time, as the rule does, and writes a test that prints every case whose result
differs from the expected one (and fails if any does). The error cases check
that the message names the header, the setting and what to change: what a
user sees in the rule's fail().
"""

load(
    "//codegen:include_paths.bzl",
    "generated_include",
    "generated_name",
    "include_path",
    "spelled_include",
)

def _describe(result):
    if result.error:
        return "error: " + result.error
    return result.path

def _check(failures, name, actual, expected = None, error_contains = []):
    if error_contains:
        if not actual.startswith("error: "):
            failures.append("%s: expected an error, got %r" % (name, actual))
            return
        for text in error_contains:
            if text not in actual:
                failures.append("%s: the error does not say %r: %r" % (name, text, actual))
    elif actual != expected:
        failures.append("%s: expected %r, got %r" % (name, expected, actual))

def _cases():
    failures = []

    # include_path: a file of another repository is included without ../<repo>/.
    _check(failures, "include_path main", include_path("models/mlp.h"), "models/mlp.h")
    _check(failures, "include_path external", include_path("../kindling/runtime/kindling/nn/linear.h"), "runtime/kindling/nn/linear.h")

    # spelled_include: as cc_library exposes the header.
    _check(failures, "no prefixes", _describe(spelled_include("models", "models/mlp.h")), "models/mlp.h")
    _check(failures, "root package", _describe(spelled_include("", "mlp.h")), "mlp.h")
    _check(failures, "absolute strip", _describe(spelled_include("runtime/kindling/nn", "runtime/kindling/nn/linear.h", "/runtime")), "kindling/nn/linear.h")
    _check(failures, "relative strip", _describe(spelled_include("tests/codegen", "tests/codegen/prefixed/part.h", "prefixed")), "part.h")
    _check(failures, "strip and prefix", _describe(spelled_include("tests/codegen", "tests/codegen/prefixed/part.h", "prefixed", "codegen_prefixed")), "codegen_prefixed/part.h")
    _check(failures, "prefix only strips the package", _describe(spelled_include("models", "models/sub/mlp.h", "", "mylib")), "mylib/sub/mlp.h")
    _check(failures, "strip with trailing slash", _describe(spelled_include("models", "models/include/mlp.h", "include/")), "mlp.h")
    _check(
        failures,
        "header outside strip_include_prefix",
        _describe(spelled_include("models", "models/mlp.h", "include")),
        error_contains = ["'models/mlp.h'", "strip_include_prefix 'include'", "'models/include'", "change strip_include_prefix"],
    )
    _check(
        failures,
        "absolute include_prefix",
        _describe(spelled_include("models", "models/mlp.h", "", "/mylib")),
        error_contains = ["include_prefix '/mylib' is absolute", "'mylib'"],
    )

    # generated_include / generated_name.
    _check(failures, "generated include", generated_include("mylib/mlp.hpp"), "mylib/mlp.kindling.h")
    _check(failures, "generated name", _describe(generated_name("models", "models/sub/mlp.h")), "sub/mlp.kindling.h")
    _check(failures, "generated name, root", _describe(generated_name("", "mlp.hh")), "mlp.kindling.h")
    _check(
        failures,
        "header of another package",
        _describe(generated_name("models", "other/mlp.h")),
        error_contains = ["'other/mlp.h' is not in package 'models'", "call kindling_module_library in the BUILD file of the package that holds 'other/mlp.h'"],
    )
    _check(
        failures,
        "not a header",
        _describe(generated_name("models", "models/mlp.cc")),
        error_contains = ["'mlp.cc' is not a header", ".h"],
    )
    return failures

def _include_paths_test_impl(ctx):
    failures = _cases()
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    lines = ["#!/usr/bin/env bash"]
    for failure in failures:
        lines.append("echo 'FAIL: %s'" % failure.replace("'", "'\\''"))
    if failures:
        lines.append("exit 1")
    else:
        lines.append("echo 'include path cases: all pass'")
    ctx.actions.write(script, "\n".join(lines) + "\n", is_executable = True)
    return [DefaultInfo(executable = script)]

include_paths_test = rule(
    implementation = _include_paths_test_impl,
    test = True,
)
