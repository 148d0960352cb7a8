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
  runtime/kindling/io/json.cc runtime/kindling/io/safetensors.cc \
  tests/io/safetensors_fuzzer.cc \
  "${absl_libs[@]}" -o "$work/safetensors_fuzzer"

clang++-14 "${flags[@]}" \
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
