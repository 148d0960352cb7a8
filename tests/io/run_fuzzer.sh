#!/usr/bin/env bash
# Builds the checkpoint readers -- safetensors, and torch.save (zip +
# restricted unpickler) -- with clang's libFuzzer + ASan + UBSan and runs each
# from its checked-in corpus (malformed files plus valid seeds).
#
#   tests/io/run_fuzzer.sh [RUNS] [extra libFuzzer flags...]
#
# RUNS (per fuzzer) defaults to 1000000. The build needs clang++-14 and
# libclang-rt-14-dev (gcc has no libFuzzer). Exits non-zero if a fuzzer finds
# a crash; the crashing input is left in $WORK/crash-*.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs="${1:-1000000}"
shift || true
work="${FUZZ_WORKDIR:-/tmp/kindling-fuzz}"
mkdir -p "$work/corpus" "$work/torch_corpus"

# shellcheck source=tests/fuzz_build_flags.sh
source tests/fuzz_build_flags.sh

clang++-14 "${fuzz_flags[@]}" \
  runtime/kindling/io/json.cc runtime/kindling/io/safetensors.cc \
  tests/io/safetensors_fuzzer.cc \
  "${absl_libs[@]}" -o "$work/safetensors_fuzzer"

clang++-14 "${fuzz_flags[@]}" \
  runtime/kindling/io/json.cc runtime/kindling/io/safetensors.cc \
  runtime/kindling/io/pickle.cc runtime/kindling/io/torch_zip.cc \
  tests/io/torch_zip_fuzzer.cc \
  "${absl_libs[@]}" -lminizip -lz -o "$work/torch_zip_fuzzer"

cp tests/io/malformed/*.safetensors "$work/corpus/"
cp tests/data/*.safetensors "$work/corpus/" 2>/dev/null || true
cp tests/io/torch_corpus/* "$work/torch_corpus/"

cd "$work"
./safetensors_fuzzer -runs="$runs" -max_len=4096 -print_final_stats=1 \
  "$@" corpus
./torch_zip_fuzzer -runs="$runs" -max_len=8192 -print_final_stats=1 \
  "$@" torch_corpus
