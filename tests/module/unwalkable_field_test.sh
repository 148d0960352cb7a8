#!/usr/bin/env bash
# Every module walk refuses, at compile time, a field type that holds
# parameters where no walk can reach them, and names that type.
#
# Compiles unwalkable/unwalkable_field.cc with the system C++ compiler (the
# one Bazel uses; $CXX if set), once per walk and per field type, and expects each to fail
# with the static_assert of kindling/module/field_kinds.h naming the type.
set -uo pipefail

compiler=${CXX:-g++}
source=tests/module/unwalkable/unwalkable_field.cc
# KINDLING_INCLUDE_FLAGS comes from compile_fail_test.bzl: the include paths
# of the runtime and the test modules.
# shellcheck disable=SC2206
flags=(-std=c++20 -fsyntax-only ${KINDLING_INCLUDE_FLAGS:-})
failures=0

compile() {
  "$compiler" "${flags[@]}" "$@" "$source" 2>&1
}

if ! output=$(compile -DWALK=0); then
  echo "FAIL: the test file does not compile without a walk:"
  echo "$output"
  exit 1
fi

# Cases: field type | walks (see unwalkable_field.cc) | how the compiler
# spells the type in the error. Every walk with one type, and every type with
# the two walk families (leaf walk, record type).
cases=(
  "std::map<std::string, demo::Dense>|1 2 3 4 5 6|FieldTypeTheWalksCannotReach<std::map<"
  "std::unique_ptr<demo::Dense>|1 5|FieldTypeTheWalksCannotReach<std::unique_ptr<demo::Dense"
  "std::list<demo::CountingParam>|1 5|FieldTypeTheWalksCannotReach<std::__cxx11::list<kindling::Param<"
  "demo::CountingParam*|1 5|FieldTypeTheWalksCannotReach<kindling::Param<kindling::testing::CountingParameter>*>"
)
for entry in "${cases[@]}"; do
  IFS='|' read -r field_type walks expected <<<"$entry"
  for walk in $walks; do
    output=$(compile "-DFIELD_TYPE=$field_type" "-DWALK=$walk")
    status=$?
    if ((status == 0)); then
      echo "FAIL: walk $walk over a $field_type field compiled"
      failures=$((failures + 1))
    elif ! grep -qF "holds parameters (a Param, Buffer or module) where no module walk can reach them" <<<"$output" ||
      ! grep -qF "$expected" <<<"$output"; then
      echo "FAIL: walk $walk over a $field_type field failed without naming it:"
      echo "$output" | head -30
      failures=$((failures + 1))
    else
      echo "ok: walk $walk refuses $field_type"
    fi
  done
done
exit $((failures > 0))
