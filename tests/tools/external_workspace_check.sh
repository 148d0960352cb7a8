#!/usr/bin/env bash
# external_workspace_check.sh: Kindling used from a workspace of its own, the
# way docs/use-in-your-project.md tells a user to.
#
#   tests/tools/external_workspace_check.sh
#
# 1. examples/external_workspace (Kindling as `local_repository(name =
#    "kindling", path = "../..")`): `test //...`, then `run //:train`, which
#    must print the loss going down and a checkpoint round trip; then its
#    model and test with Kindling from an `http_archive` pinned by sha256 (a
#    file:// URL of this checkout's files).
# 2. Every @kindling label in docs/*.md and README.md, and every bare label of
#    docs/use-in-your-project.md (the example's own), resolves there (`bazel
#    query`); the bare labels of the other pages and the README (commands run
#    in a Kindling checkout) resolve in Kindling's own workspace.
# 3. The errors a user meets, each in a scratch workspace of its own under a
#    temporary directory: a mark without Kindling's annotations, a missing
#    dep, a header outside strip_include_prefix, no C++20 flag, no
#    kindling_dependencies(). Each build must fail with its own message and
#    without a compiler cascade.
# 4. With /usr/local/cuda/bin/nvcc present: `build --config=cuda //...` of the
#    example (compiles and links the CUDA backend; needs no GPU).
#
# Bazel runs through Kindling's tools/bazel (it installs missing Debian
# packages) with an output base of its own under
# ${KINDLING_EXTERNAL_CACHE:-$HOME/.cache/kindling-external-workspace}, so a
# second run is incremental; the scratch workspaces share the example's disk
# cache and so rebuild nothing. Exits non-zero when any check fails.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
example="$root/examples/external_workspace"
bazel="$root/tools/bazel"
cache_dir=${KINDLING_EXTERNAL_CACHE:-${HOME:-/tmp}/.cache/kindling-external-workspace}
# One output base per checkout: two checkouts must not share a server.
checkout_id=$(printf '%s' "$root" | md5sum | cut -c1-12)
output_base="$cache_dir/$checkout_id/example"
disk_cache="$cache_dir/$checkout_id/disk_cache"
scratch=$(mktemp -d -t kindling-external.XXXXXX)
mkdir -p "$output_base" "$disk_cache"

failures=0
# Output bases whose Bazel servers this script started, shut down at exit.
started_output_bases=()

cleanup() {
  local base
  for base in "${started_output_bases[@]}"; do
    "$bazel" --output_base="$base" shutdown >/dev/null 2>&1 || true
  done
  rm -rf "$scratch"
}
trap cleanup EXIT

fail() {
  echo "external_workspace_check: FAIL: $*"
  failures=$((failures + 1))
}

# bazel_in DIR OUTPUT_BASE COMMAND ARGS...: Bazel in workspace DIR. Build
# options only the script adds: no convenience symlinks (the example lives in
# Kindling's checkout), the shared disk cache, and the process-wrapper sandbox
# that Kindling's own .bazelrc picks too: Debian's linux-sandbox prints a page
# of mount debugging for every action, which would bury this log.
bazel_in() {
  local dir=$1 base=$2 command=$3
  shift 3
  local -a options=()
  if [[ $command == build || $command == test || $command == run ]]; then
    options=(--symlink_prefix=/ --disk_cache="$disk_cache"
      --spawn_strategy=processwrapper-sandbox)
  fi
  (cd "$dir" && "$bazel" --output_base="$base" "$command" "${options[@]}" "$@")
}

started_output_bases+=("$output_base")

echo "external_workspace_check: test //... in examples/external_workspace"
if ! bazel_in "$example" "$output_base" test //...; then
  fail "'bazel test //...' in examples/external_workspace"
fi

echo "external_workspace_check: run //:train"
train_log="$scratch/train.log"
if bazel_in "$example" "$output_base" run //:train -- \
  "$scratch/regressor.safetensors" >"$train_log" 2>&1; then
  cat "$train_log"
  # The loss printed at step 0 must be larger than the last one printed.
  first=$(awk '/^step/ {print $4; exit}' "$train_log")
  last=$(awk '/^step/ {value = $4} END {print value}' "$train_log")
  awk -v first="$first" -v last="$last" 'BEGIN {exit !(first != "" && last < first)}' ||
    fail "//:train: the loss did not go down ($first -> $last)"
  grep -q 'same predictions' "$train_log" || fail "//:train: no checkpoint round trip"
  [[ -s $scratch/regressor.safetensors ]] || fail "//:train: no checkpoint written"
else
  cat "$train_log"
  fail "'bazel run //:train' in examples/external_workspace"
fi

# The pinned form of docs/use-in-your-project.md: the same model with Kindling
# from an http_archive with a sha256, here a file:// URL of this checkout's
# files (CI has no network). Same action keys as above, so the disk cache
# serves the build.
echo "external_workspace_check: the example with Kindling from an http_archive"
archive_workspace="$scratch/archive_workspace"
archive_base="$cache_dir/$checkout_id/archive"
mkdir -p "$archive_workspace" "$archive_base"
(cd "$root" && git ls-files -co --exclude-standard -z |
  tar --null -T - --transform 's,^,kindling-archive/,' -czf "$scratch/kindling.tar.gz")
cp -r "$example/model" "$example/BUILD.bazel" "$example/train.cc" "$example/.bazelrc" \
  "$archive_workspace/"
cat >"$archive_workspace/WORKSPACE" <<EOF
workspace(name = "kindling_example")

load("@bazel_tools//tools/build_defs/repo:http.bzl", "http_archive")

http_archive(
    name = "kindling",
    sha256 = "$(sha256sum "$scratch/kindling.tar.gz" | cut -d ' ' -f 1)",
    strip_prefix = "kindling-archive",
    urls = ["file://$scratch/kindling.tar.gz"],
)

load("@kindling//bazel:deps.bzl", "kindling_dependencies")

kindling_dependencies()
EOF
started_output_bases+=("$archive_base")
if ! bazel_in "$archive_workspace" "$archive_base" test //...; then
  fail "'bazel test //...' with Kindling from an http_archive"
fi
"$bazel" --output_base="$archive_base" shutdown >/dev/null 2>&1 || true

echo "external_workspace_check: the labels the docs name resolve where they are meant"
# labels_in PATTERN FILE...: the labels matching PATTERN in the files,
# without target patterns (//x/...), placeholders (//x/<layer>) and
# trailing punctuation.
labels_in() {
  local pattern=$1
  shift
  grep -ohE "$pattern" "$@" | sed -E 's#^[^@/]*(@|//)#\1#' |
    grep -vE '/\.\.\.' | sed -E 's/[.,]+$//' |
    grep -vE '/$|^//:?$|^//(conditions|visibility):' | sort -u
}
readonly bare_label='(^|[^A-Za-z0-9_@:/.-])//[A-Za-z0-9_./+-]*(:[A-Za-z0-9_./+=,~-]+)?'
# In a user's workspace: the @kindling labels of every page, and the bare
# labels of docs/use-in-your-project.md (the example's own targets).
mapfile -t labels < <(
  {
    labels_in '@kindling//[A-Za-z0-9_./+-]*(:[A-Za-z0-9_./+=,~-]+)?' \
      "$root"/docs/*.md "$root/README.md"
    labels_in "$bare_label" "$root/docs/use-in-your-project.md"
  } | sort -u
)
if ((${#labels[@]} == 0)); then
  fail "no labels found in the docs"
elif ! bazel_in "$example" "$output_base" query "set(${labels[*]})" >/dev/null; then
  fail "a label in docs/*.md or README.md does not resolve in examples/external_workspace: ${labels[*]}"
fi
# In Kindling's own workspace: the bare labels of the other pages and the
# README (the commands they show run in a Kindling checkout).
mapfile -t own_labels < <(
  labels_in "$bare_label" $(ls "$root"/docs/*.md | grep -v '/use-in-your-project\.md$') \
    "$root/README.md"
)
if ((${#own_labels[@]} > 0)) &&
  ! (cd "$root" && "$bazel" query "set(${own_labels[*]})" >/dev/null); then
  fail "a label in docs/*.md or README.md does not resolve in Kindling's workspace: ${own_labels[*]}"
fi

# --- The errors a user meets ---------------------------------------------------

errors="$scratch/errors"
errors_base="$cache_dir/$checkout_id/errors"
mkdir -p "$errors/bad" "$errors/prefix/src" "$errors/cxx17" "$errors_base"
cp "$example/.bazelrc" "$errors/.bazelrc"
cat >"$errors/WORKSPACE" <<EOF
workspace(name = "kindling_example")

local_repository(
    name = "kindling",
    path = "$root",
)

load("@kindling//bazel:deps.bzl", "kindling_dependencies")

kindling_dependencies()
EOF
# Each library has a source that includes its generated header, as a user's
# code does: building it runs the generator (a header-only cc_library alone
# builds nothing).
cat >"$errors/bad/BUILD.bazel" <<'EOF'
load("@kindling//codegen:defs.bzl", "kindling_module_library")

kindling_module_library(
    name = "undefined_mark",
    srcs = ["undefined_mark.cc"],
    hdrs = ["undefined_mark.h"],
    deps = ["@kindling//:kindling"],
)

kindling_module_library(
    name = "missing_dep",
    srcs = ["missing_dep.cc"],
    hdrs = ["missing_dep.h"],
)
EOF
printf '#include "bad/undefined_mark.kindling.h"\n' >"$errors/bad/undefined_mark.cc"
printf '#include "bad/missing_dep.kindling.h"\n' >"$errors/bad/missing_dep.cc"
cat >"$errors/bad/undefined_mark.h" <<'EOF'
#include "kindling/core/param.h"
#include "kindling/tensor/tensor.h"

struct KINDLING_MODULE Model {
  kindling::Param<kindling::Tensor<2>> weight;
};
EOF
cat >"$errors/bad/missing_dep.h" <<'EOF'
#include "kindling/module/annotations.h"
#include "kindling/nn/linear.h"

struct KINDLING_MODULE Model {
  kindling::nn::Linear fc;
};
EOF
cat >"$errors/prefix/BUILD.bazel" <<'EOF'
load("@kindling//codegen:defs.bzl", "kindling_module_library")

kindling_module_library(
    name = "model",
    hdrs = ["model.h"],
    strip_include_prefix = "src",
    deps = ["@kindling//:kindling"],
)
EOF
cp "$errors/bad/missing_dep.h" "$errors/prefix/model.h"
cat >"$errors/cxx17/BUILD.bazel" <<'EOF'
cc_library(
    name = "uses_kindling",
    srcs = ["uses_kindling.cc"],
    deps = ["@kindling//runtime/kindling/module:annotations"],
)
EOF
printf '#include "kindling/module/annotations.h"\n' >"$errors/cxx17/uses_kindling.cc"
started_output_bases+=("$errors_base")

# expect_failure NAME EXPECTED_LINE_REGEX ARGS...: `bazel ARGS` in the scratch
# workspace must fail and print a line matching the regex, and at most one
# `file:line:col: error:` line from the compiler or generator (no cascade).
expect_failure() {
  local name=$1 expected=$2
  shift 2
  local log="$scratch/$name.log"
  echo "external_workspace_check: the error for $name"
  if bazel_in "$errors" "$errors_base" "$@" >"$log" 2>&1; then
    fail "$name: the build succeeded"
    return
  fi
  if ! grep -qE "$expected" "$log"; then
    cat "$log"
    fail "$name: no line matching: $expected"
    return
  fi
  local errors_printed
  errors_printed=$(grep -cE '^[^ ]+:[0-9]+:[0-9]+: (fatal )?error:' "$log")
  if ((errors_printed > 1)); then
    cat "$log"
    fail "$name: $errors_printed compiler errors, expected one"
    return
  fi
  grep -E "$expected" "$log" | head -n 1 | sed 's/^/  /'
}

expect_failure "a mark without Kindling's annotations" \
  "^bad/undefined_mark\.h:4:8: error: 'KINDLING_MODULE' is not defined here; #include \"kindling/module/annotations\.h\"" \
  build //bad:undefined_mark
expect_failure "a missing dep" \
  "^bad/missing_dep\.h:2:10: note: .*add \"@kindling//:kindling\" \(all of Kindling\) to deps" \
  build //bad:missing_dep
expect_failure "a header outside strip_include_prefix" \
  "//prefix:model: header 'prefix/model\.h' is not under strip_include_prefix 'src'" \
  build //prefix:model
expect_failure "a build without the C++20 flag" \
  "Kindling needs C\+\+20: add \`build --cxxopt=-std=c\+\+20 --host_cxxopt=-std=c\+\+20\` to your \.bazelrc" \
  build --cxxopt=-std=c++17 //cxx17:uses_kindling

# Without kindling_dependencies(), Bazel 4.2.3 cannot even load a package
# that uses Kindling's macros; checked in a workspace of its own.
no_deps="$scratch/no_deps"
no_deps_base="$cache_dir/$checkout_id/no_deps"
mkdir -p "$no_deps/cxx17" "$no_deps_base"
cp "$errors/cxx17/BUILD.bazel" "$errors/cxx17/uses_kindling.cc" "$no_deps/cxx17/"
cp "$example/.bazelrc" "$no_deps/.bazelrc"
printf 'local_repository(\n    name = "kindling",\n    path = "%s",\n)\n' "$root" >"$no_deps/WORKSPACE"
started_output_bases+=("$no_deps_base")
echo "external_workspace_check: the error without kindling_dependencies()"
if bazel_in "$no_deps" "$no_deps_base" build //cxx17:uses_kindling >"$scratch/no_deps.log" 2>&1; then
  fail "without kindling_dependencies(): the build succeeded"
elif ! grep -qE "no such package '@(absl|rules_cc|rules_java)//|Error downloading|rules_java" "$scratch/no_deps.log"; then
  cat "$scratch/no_deps.log"
  fail "without kindling_dependencies(): not the error docs/use-in-your-project.md describes"
else
  grep -m 1 -E "ERROR" "$scratch/no_deps.log" | cut -c1-200 | sed 's/^/  /'
fi

# --- CUDA ---------------------------------------------------------------------

if [[ -x /usr/local/cuda/bin/nvcc ]]; then
  echo "external_workspace_check: build --config=cuda //... in examples/external_workspace"
  if ! bazel_in "$example" "$output_base" build --config=cuda //...; then
    fail "'bazel build --config=cuda //...' in examples/external_workspace"
  fi
else
  echo "external_workspace_check: skipping --config=cuda: /usr/local/cuda/bin/nvcc not found"
fi

if ((failures > 0)); then
  echo "external_workspace_check: $failures check(s) failed"
  exit 1
fi
echo "external_workspace_check: all checks pass"
