#!/usr/bin/env bash
# Compares kindling-gen's output for tests/codegen/testdata/*.h byte for byte
# with the checked-in tests/codegen/golden/*.kindling.h.
#
# Arguments: the generated files. After an intended change to the generator,
# refresh the goldens with `tools/bazel run //tests/codegen:update_golden`.
set -euo pipefail

golden_dir=tests/codegen/golden
failures=0
for generated in "$@"; do
  name=$(basename "$generated")
  golden="$golden_dir/$name"
  if [[ ! -f $golden ]]; then
    echo "FAIL: $name: no golden file $golden"
    failures=$((failures + 1))
  elif ! diff -u "$golden" "$generated"; then
    echo "FAIL: $name differs from $golden (diff above: - golden, + generated)"
    failures=$((failures + 1))
  else
    echo "ok: $name"
  fi
done
for golden in "$golden_dir"/*.kindling.h; do
  found=0
  for generated in "$@"; do
    [[ $(basename "$generated") == $(basename "$golden") ]] && found=1
  done
  if ((found == 0)); then
    echo "FAIL: $golden has no testdata header"
    failures=$((failures + 1))
  fi
done
if ((failures > 0)); then
  echo "$failures golden file(s) out of date; if the change is intended, run:"
  echo "  tools/bazel run //tests/codegen:update_golden"
  exit 1
fi
