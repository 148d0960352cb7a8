#!/usr/bin/env bash
# Builds the rendezvous store's frame parser (runtime/kindling/distributed/
# store_protocol.cc) with clang's libFuzzer + ASan + UBSan and runs it from
# its checked-in corpus (valid and malformed frames, make_store_corpus.py).
#
#   tests/distributed/run_store_fuzzer.sh [RUNS] [extra libFuzzer flags...]
#
# RUNS defaults to 1000000. The build needs clang++-14 and libclang-rt-14-dev
# (gcc has no libFuzzer). Exits non-zero if the fuzzer finds a crash; the
# crashing input is left in $WORK/crash-*.
set -euo pipefail
cd "$(dirname "$0")/../.."

runs="${1:-1000000}"
shift || true
work="${FUZZ_WORKDIR:-/tmp/kindling-fuzz}"
mkdir -p "$work/store_corpus"

# shellcheck source=tests/fuzz_build_flags.sh
source tests/fuzz_build_flags.sh

clang++-14 "${fuzz_flags[@]}" \
  runtime/kindling/distributed/store_protocol.cc \
  tests/distributed/store_protocol_fuzzer.cc \
  "${absl_libs[@]}" -lcrypto -o "$work/store_protocol_fuzzer"

cp tests/distributed/store_corpus/* "$work/store_corpus/"

cd "$work"
./store_protocol_fuzzer -runs="$runs" -max_len=16384 -print_final_stats=1 \
  "$@" store_corpus
