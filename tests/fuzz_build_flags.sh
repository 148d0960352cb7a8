# Sourced by the fuzzer scripts (tests/io/run_fuzzer.sh,
# tests/distributed/run_store_fuzzer.sh): the clang++-14 flags of a libFuzzer
# + ASan + UBSan build from the repository root, and the Abseil libraries
# Kindling's sources link (Debian's, one library per component).
# shellcheck disable=SC2034  # used by the scripts that source this file
fuzz_flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
  -I runtime -I .)

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
