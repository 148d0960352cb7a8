#!/usr/bin/env bash
# Writes kindling-gen's output for tests/codegen/testdata/*.h over the golden
# files in the source tree. Run with `tools/bazel run //tests/codegen:update_golden`.
#
# Arguments: the generated files.
set -euo pipefail

if [[ -z ${BUILD_WORKSPACE_DIRECTORY:-} ]]; then
  echo "update_golden: run me with 'tools/bazel run //tests/codegen:update_golden'" >&2
  exit 2
fi
golden_dir=$BUILD_WORKSPACE_DIRECTORY/tests/codegen/golden
mkdir -p "$golden_dir"
rm -f "$golden_dir"/*.kindling.h
for generated in "$@"; do
  install -m 0644 "$generated" "$golden_dir/$(basename "$generated")"
  echo "updated tests/codegen/golden/$(basename "$generated")"
done
