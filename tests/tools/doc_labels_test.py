#!/usr/bin/python3
"""doc_labels_test: every Bazel target the documentation names exists.

    doc_labels_test.py --targets=LIST --tools-bazel=tools/bazel FILE...

LIST is the output of //tests/tools:documented_targets, whose labels Bazel
has checked. Each FILE is read for labels:

  - a page (.md): labels of a named repository, `@kindling//runtime/...`
    (Kindling's own, written as a user's workspace writes them) or
    `@absl//:absl`. A bare `//model:regressor` on a page names the reader's
    own workspace and is not checked here.
  - a .bzl file: the labels in its docstrings, bare ones being Kindling's own.

A label not in LIST fails the test, naming the file and line. Target patterns
(`//...`) and visibility specifications are not targets and are skipped.

docs/use-in-your-project.md also shows the `apt-get install` line of the
packages to install; it must list exactly what `tools/bazel --list-packages`
prints, in that order.
"""

import argparse
import os
import re
import subprocess
import sys

# @repo//package:target, //package:target, //package. Not inside a word, a
# URL (https://) or a longer label.
_LABEL = re.compile(
    r"(?<![\w@:/.-])(@[\w.-]+)?//([\w./+-]*)(?::([\w./+=,~-]+))?")
_DOCSTRING = re.compile(r'"""(.*?)"""', re.DOTALL)
_APT_LINE = re.compile(r"^\s*sudo apt-get install (.+)$", re.MULTILINE)

# Repositories that are not Kindling's to document: Bazel's own.
_SKIPPED_REPOSITORIES = {"@bazel_tools"}


def normalize(repository, package, target):
    """The canonical spelling: //package:target in Kindling, @repo//... else.

    Returns None for what is not a target (a pattern, a visibility).
    """
    package = package.rstrip("./")
    if "..." in package or (target and "..." in target):
        return None
    if repository in _SKIPPED_REPOSITORIES:
        return None
    if repository == "@kindling":
        repository = None
    if not package and not target:
        return None  # a C++ comment, not a label
    if package in ("conditions", "visibility") or (
            target and target.startswith("__")):
        return None
    if not target:
        target = package.rsplit("/", 1)[-1]
    target = target.rstrip(".,")
    return "%s//%s:%s" % (repository or "", package, target)


def labels_in(text, bare_labels_are_kindling):
    """(line number, label) for each label in `text`."""
    found = []
    for match in _LABEL.finditer(text):
        repository, package, target = match.groups()
        if repository is None and not bare_labels_are_kindling:
            continue
        label = normalize(repository, package, target)
        if label is not None:
            line = text.count("\n", 0, match.start()) + 1
            found.append((line, label))
    return found


def labels_in_file(path):
    with open(path, encoding="utf-8") as file:
        text = file.read()
    if not path.endswith(".bzl"):
        return labels_in(text, bare_labels_are_kindling=False)
    found = []
    for docstring in _DOCSTRING.finditer(text):
        offset = text.count("\n", 0, docstring.start())
        found += [(offset + line, label) for line, label in labels_in(
            docstring.group(1), bare_labels_are_kindling=True)]
    return found


def normalize_listed(line):
    match = _LABEL.fullmatch(line.strip())
    if not match:
        return None
    return normalize(*match.groups())


def unknown_labels(paths, known):
    problems = []
    for path in paths:
        for line, label in labels_in_file(path):
            if label not in known:
                problems.append(
                    "%s:%d: %s is not a target (or is missing from "
                    "//tests/tools:documented_targets)" % (path, line, label))
    return problems


def package_line_problems(paths, tools_bazel):
    listed = subprocess.run(["bash", tools_bazel, "--list-packages"],
                            check=True, capture_output=True,
                            text=True).stdout.split()
    problems = []
    for path in paths:
        if os.path.basename(path) != "use-in-your-project.md":
            continue
        with open(path, encoding="utf-8") as file:
            lines = _APT_LINE.findall(file.read())
        if not lines:
            problems.append("%s: no `sudo apt-get install` line" % path)
        for line in lines:
            if line.split() != listed:
                problems.append(
                    "%s: the apt-get line lists %s; tools/bazel "
                    "--list-packages gives %s" %
                    (path, " ".join(line.split()), " ".join(listed)))
    return problems


def self_test():
    """The checker itself catches a wrong label (the one issue 25 found)."""
    sample = ('deps = ["@kindling//runtime/kindling/nn:linear"]\n'
              'see https://example.com//x and `bazel test //...`\n')
    found = labels_in(sample, bare_labels_are_kindling=False)
    assert found == [(1, "//runtime/kindling/nn:linear")], found
    assert labels_in("@kindling//runtime/kindling/tensor.",
                     False) == [(1, "//runtime/kindling/tensor:tensor")]
    assert labels_in('"//codegen:defs.bzl"', True) == [(1,
                                                       "//codegen:defs.bzl")]
    assert labels_in("@absl//:absl", False) == [(1, "@absl//:absl")]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--targets", required=True)
    parser.add_argument("--tools-bazel", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    self_test()
    with open(args.targets, encoding="utf-8") as file:
        known = {normalize_listed(line) for line in file if line.strip()}
    problems = unknown_labels(args.files, known)
    problems += package_line_problems(args.files, args.tools_bazel)
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print("%d files: every label names a target" % len(args.files))
    return 0


if __name__ == "__main__":
    sys.exit(main())
