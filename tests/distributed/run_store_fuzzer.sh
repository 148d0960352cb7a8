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

absl_libs=(-labsl_status -labsl_statusor -labsl_str_format_internal
  -labsl_strings -labsl_strings_internal -labsl_cord -labsl_cord_internal
  -labsl_cordz_functions -labsl_cordz_handle -labsl_cordz_info
  -labsl_synchronization -labsl_graphcycles_internal -labsl_hash -labsl_city
  -labsl_low_level_hash -labsl_raw_hash_set -labsl_hashtablez_sampler
  -labsl_time -labsl_time_zone -labsl_int128 -labsl_bad_optional_access
  -labsl_stacktrace -labsl_symbolize -labsl_debugging_internal
  -labsl_demangle_internal -labsl_malloc_internal -labsl_strerror
  -labsl_throw_delegate -labsl_exponential_biased -labsl_log_severity
  -labsl_raw_logging_internal -labsl_spinlock_wait -labsl_base)

flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I runtime -I .)

clang++-14 "${flags[@]}" \
  runtime/kindling/distributed/store_protocol.cc \
  tests/distributed/store_protocol_fuzzer.cc \
  "${absl_libs[@]}" -lcrypto -o "$work/store_protocol_fuzzer"

cp tests/distributed/store_corpus/* "$work/store_corpus/"

cd "$work"
./store_protocol_fuzzer -runs="$runs" -max_len=16384 -print_final_stats=1 \
  "$@" store_corpus
