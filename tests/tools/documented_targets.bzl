"""documented_targets: the targets the documentation may name, checked by Bazel.

Every label in `targets` is a dependency, so a misspelled or deleted target
fails the build of this rule; its output lists them for doc_labels_test, which
fails when a page names a target that is not listed. Together: every target
the documentation names exists.

`cuda_targets` exist only with --config=cuda (their repository, @cuda, is
/usr/local/cuda, and the CUDA libraries are incompatible without the flag):
they are listed always, and checked by Bazel under --config=cuda, which
.ci/run builds.
"""

def _documented_targets_impl(ctx):
    output = ctx.actions.declare_file(ctx.label.name + ".txt")
    # The labels as written: an alias's target.label would be its actual.
    ctx.actions.write(output, "\n".join(sorted(ctx.attr.names)) + "\n")
    return [DefaultInfo(
        files = depset([output]),
        runfiles = ctx.runfiles(files = [output]),
    )]

_documented_targets = rule(
    implementation = _documented_targets_impl,
    attrs = {
        "targets": attr.label_list(allow_files = True),
        "names": attr.string_list(),
    },
)

def documented_targets(name, targets, cuda_targets = [], **kwargs):
    _documented_targets(
        name = name,
        targets = targets + select({
            str(Label("//third_party/cuda:enabled")): cuda_targets,
            "//conditions:default": [],
        }),
        names = targets + cuda_targets,
        **kwargs
    )
