#!/usr/bin/env bash
# run_on_gpu.sh — runs Kindling's GPU bundle (made by tools/gpu_bundle) on the
# machine it is unpacked on, and writes what happened under --out.
#
#   ./run_on_gpu.sh [--out DIR] [--steps env,tests,sanitizer,benches,kernels,examples,cpu,dp]
#                   [--cpu-smoke] [--timeout SECONDS]
#
# Steps (default: env,tests):
#   env        nvidia-smi, driver, compute capability, CPU flags, glibc and
#              libstdc++ versions, where cuBLAS comes from, `ld.so --list` of
#              every binary; fails on any library not found;
#   tests      every test binary (gtest XML), with KINDLING_REQUIRE_GPU set to
#              the GPU count, so a GPU case that cannot run fails instead of
#              skipping; a failed binary is run again with
#              KINDLING_CUDA_SYNC_LAUNCHES=1 to name the kernel that faulted;
#   sanitizer  compute-sanitizer memcheck over cuda_backend_test;
#   benches    cuda_kernels_bench, device_load_bench, train_bench's device
#              epochs (JSON); a benchmark that reports an error fails;
#   kernels    cuda_kernels_bench alone (about a minute: for a kernel change);
#   examples   quickstart and cnn on cuda:0 (the bundle's Fashion-MNIST subset);
#   cpu        train_bench's CPU epochs (MLP, CNN) against the FLOP limit,
#              the MLP epoch's products alone and the epoch against them
#              (epoch_vs_products), pinned to cores 0 and 1 of this quiet
#              machine, no peers;
#   dp         data_parallel_bench over Gloo on cores 0-1 and 0-3, and on
#              0-3 with 256 KiB buckets.
# Each command has its own timeout (--timeout, default 480 s), so one hang
# cannot use up a device call.
#
# --cpu-smoke: the check CI runs on a machine without a GPU. Every binary runs
# with the system's library directory replaced by one holding only glibc,
# libstdc++ and libgcc_s (a private mount namespace), so a library the bundle
# forgot fails here as it would on a bare GPU machine; GPU cases skip, saying
# why, and CUDA must report "no device" (not "failed to initialize").
#
# Output (at most 8 files): DIR/summary.txt (one line per check, then PASS or
# FAIL), DIR/env.txt, DIR/results.tar.gz (every log, XML and JSON). Exit code
# 0 when every check passed.
set -uo pipefail

readonly BUNDLE=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/gpu-results}
steps=env,tests
cpu_smoke=0
step_timeout=480

while (($# > 0)); do
  case $1 in
    --out) out=$2; shift 2 ;;
    --out=*) out=${1#--out=}; shift ;;
    --steps) steps=$2; shift 2 ;;
    --steps=*) steps=${1#--steps=}; shift ;;
    --cpu-smoke) cpu_smoke=1; shift ;;
    --timeout) step_timeout=$2; shift 2 ;;
    --timeout=*) step_timeout=${1#--timeout=}; shift ;;
    -h | --help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "run_on_gpu.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

mkdir -p "$out" || exit 2
readonly LOGS=$(mktemp -d -t kindling-gpu-logs.XXXXXX)
readonly SCRATCH=$(mktemp -d -t kindling-gpu-scratch.XXXXXX)
readonly SUMMARY=$out/summary.txt
readonly ENV_FILE=$out/env.txt
: >"$SUMMARY"
: >"$ENV_FILE"
checks_failed=0

# check NAME STATUS DETAIL: one summary line; STATUS is PASS, FAIL or SKIP.
check() {
  printf '%-4s %s%s\n' "$2" "$1" "${3:+: $3}" | tee -a "$SUMMARY"
  [[ $2 == FAIL ]] && checks_failed=$((checks_failed + 1))
  return 0
}

wants_step() { [[ ",$steps," == *",$1,"* ]]; }

# --- Libraries ---------------------------------------------------------------

# find_cuda_library OVERRIDE_DIR LIBRARY [ALSO...]: the first directory that
# holds LIBRARY (and every ALSO): OVERRIDE_DIR when set, then the CUDA
# Toolkit, then the nvidia pip packages PyTorch brings.
find_cuda_library() {
  local override=$1 library=$2
  shift 2
  local -a candidates=()
  [[ -n $override ]] && candidates+=("$override")
  local dir
  for dir in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
    /usr/local/cuda-13*/lib64 /usr/local/cuda-13*/targets/x86_64-linux/lib; do
    candidates+=("$dir")
  done
  local python
  for python in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$python" >/dev/null 2>&1 || continue
    while IFS= read -r dir; do
      candidates+=("$dir")
    done < <("$python" - "$library" <<'EOF' 2>/dev/null
import glob, site, sys
roots = site.getsitepackages() + [site.getusersitepackages()] + sys.path
for root in roots:
    for lib in glob.glob(root + "/nvidia/**/lib/" + sys.argv[1], recursive=True):
        print(lib.rsplit("/", 1)[0])
EOF
    )
  done
  local also
  for dir in "${candidates[@]}"; do
    [[ -e $dir/$library ]] || continue
    for also in "$@"; do
      [[ -e $dir/$also ]] || continue 2
    done
    echo "$dir"
    return 0
  done
  return 1
}

# find_cublas: the directory of the machine's CUDA 13 libcublas.so.13 and
# libcublasLt.so.13 (KINDLING_CUBLAS_DIR first).
find_cublas() {
  find_cuda_library "${KINDLING_CUBLAS_DIR:-}" libcublas.so.13 libcublasLt.so.13
}

# find_nccl: the directory of the machine's libnccl.so.2 (KINDLING_NCCL_DIR
# first). The bundle cannot carry it (178 MiB xz'd); only
# nccl_communicator_test needs it.
find_nccl() {
  find_cuda_library "${KINDLING_NCCL_DIR:-}" libnccl.so.2
}

# The dynamic loader, run directly: `ld.so --list` needs no other program.
readonly LOADER=/lib64/ld-linux-x86-64.so.2
# In --cpu-smoke, the private library directory that hides the system's.
minimal_libs=""

make_minimal_libs() {
  minimal_libs=$(mktemp -d -t kindling-minimal-libs.XXXXXX)
  local lib path
  for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 \
    libpthread.so.0 librt.so.1 libstdc++.so.6 libgcc_s.so.1; do
    path=$(readlink -f "/usr/lib/x86_64-linux-gnu/$lib") || continue
    [[ -e $path ]] && cp "$path" "$minimal_libs/$lib"
  done
}

# in_bundle_env COMMAND...: runs a bundle binary with the bundle's libraries
# (and, in --cpu-smoke, with the system's library directory hidden).
in_bundle_env() {
  if ((cpu_smoke)); then
    unshare --mount bash -c \
      'mount --bind "$0" /usr/lib/x86_64-linux-gnu && exec "$@"' \
      "$minimal_libs" "$@"
  else
    "$@"
  fi
}

run_timed() {  # run_timed LOG COMMAND...: the command's exit code
  local log=$1
  shift
  timeout --kill-after=20 "$step_timeout" bash -c 'in_bundle_env "$@"' _ "$@" \
    >"$log" 2>&1
}
export -f in_bundle_env
export minimal_libs cpu_smoke

# The directory cuBLAS is loaded from (find_cublas).
cublas_dir=""
# The directory NCCL is loaded from (find_nccl).
nccl_dir=""

setup_libraries() {
  local lib_path=$BUNDLE/lib
  if cublas_dir=$(find_cublas); then
    check "cuBLAS 13 found" PASS "$cublas_dir"
    lib_path+=:$cublas_dir
  else
    check "cuBLAS 13 found" FAIL "no directory with libcublas.so.13 and libcublasLt.so.13 (looked in \$KINDLING_CUBLAS_DIR, /usr/local/cuda*/lib64, /usr/local/cuda*/targets/x86_64-linux/lib and python3's nvidia/*/lib); set KINDLING_CUBLAS_DIR to one"
  fi
  if nccl_dir=$(find_nccl); then
    check "NCCL found" PASS "$nccl_dir"
    [[ $nccl_dir == "$cublas_dir" ]] || lib_path+=:$nccl_dir
  else
    check "NCCL found" FAIL "no directory with libnccl.so.2 (looked in \$KINDLING_NCCL_DIR, /usr/local/cuda*/lib64, /usr/local/cuda*/targets/x86_64-linux/lib and python3's nvidia/*/lib); set KINDLING_NCCL_DIR to one"
  fi
  export LD_LIBRARY_PATH=$lib_path
  if ((cpu_smoke)); then
    make_minimal_libs
    export minimal_libs
    if ! in_bundle_env "$LOADER" --version >/dev/null 2>&1; then
      check "system libraries hidden" FAIL "unshare --mount + mount --bind failed (needs root and util-linux)"
    fi
  fi
  # The GPU machine's libstdc++ may be older than the one we built with.
  local binary listing
  if ! in_bundle_env "$LOADER" --list "$BUNDLE/bin/cuda_backend_test" 2>&1 |
    grep -q "version .* not found"; then
    return
  fi
  export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$BUNDLE/lib/fallback
  check "libstdc++ fallback" PASS "this machine's libstdc++/libgcc_s are older than the bundle's: using lib/fallback"
}

check_libraries() {
  local binary listing missing=0 foreign
  {
    echo "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    for binary in "$BUNDLE"/bin/*; do
      echo "== $LOADER --list $binary"
      listing=$(in_bundle_env "$LOADER" --list "$binary" 2>&1)
      echo "$listing"
      if grep -qE 'not found|cannot open' <<<"$listing"; then
        missing=1
        check "libraries of $(basename "$binary")" FAIL "$(grep -E 'not found|cannot open' <<<"$listing" | tr -s ' \t\n' ' ')"
      fi
      if ((cpu_smoke)); then
        # Every library must come from the bundle, cuBLAS's or NCCL's directory or the
        # minimal glibc set, never from the rest of the system.
        foreign=$(awk '$2 == "=>" {print $3}' <<<"$listing" |
          grep -vE "^($BUNDLE/lib/|/usr/lib/x86_64-linux-gnu/(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so|/lib/x86_64-linux-gnu/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so|${cublas_dir:-/nonexistent}/|${nccl_dir:-/nonexistent}/)" || true)
        if [[ -n $foreign ]]; then
          missing=1
          check "libraries of $(basename "$binary")" FAIL "loaded from outside the bundle: $(tr '\n' ' ' <<<"$foreign")"
        fi
      fi
    done
  } >>"$ENV_FILE"
  ((missing)) || check "every binary's libraries resolve" PASS "$(ls "$BUNDLE/bin" | wc -l) binaries"
}

# --- Environment -------------------------------------------------------------

gpu_count=0
# KINDLING_REQUIRE_GPU for the tests and benches (0 with --cpu-smoke).
required_gpus=0

record_environment() {
  {
    echo "== bundle"
    cat "$BUNDLE/MANIFEST"
    echo "== host"
    uname -a
    ldd --version 2>&1 | head -n 1
    local libstdcxx
    libstdcxx=$(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 .*x86-64/ {print $NF; exit}')
    echo "libstdc++: ${libstdcxx:-not in ldconfig}; newest GLIBCXX: $(strings "${libstdcxx:-/dev/null}" 2>/dev/null | grep -E '^GLIBCXX_[0-9.]+$' | sort -V | tail -n 1)"
    echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "CPU flags (AVX): $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^avx' | tr '\n' ' ')"
    echo "cores: $(nproc)"
    echo "== nvidia-smi"
    nvidia-smi 2>&1 || echo "nvidia-smi not available"
    nvidia-smi --query-gpu=index,name,driver_version,compute_cap,memory.total,mig.mode.current \
      --format=csv 2>&1 || true
    echo "== nvcc"
    nvcc --version 2>&1 | tail -n 2 || echo "nvcc not on PATH"
    if command -v cuobjdump >/dev/null 2>&1; then
      echo "== cuobjdump --list-elf (every binary with CUDA code)"
      local binary
      for binary in "$BUNDLE"/bin/*; do
        cuobjdump --list-elf "$binary" 2>/dev/null | sed "s|^|$(basename "$binary"): |"
      done
    fi
  } >>"$ENV_FILE" 2>&1
  if ((cpu_smoke)); then
    check "mode" PASS "--cpu-smoke: no GPU expected, GPU cases skip"
    return
  fi
  gpu_count=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
  # Without --cpu-smoke at least one GPU is required, whatever nvidia-smi says.
  required_gpus=$((gpu_count > 0 ? gpu_count : 1))
  if ((gpu_count > 0)); then
    check "GPUs visible to nvidia-smi" PASS "$gpu_count: $(nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader 2>/dev/null | head -n 1)"
  else
    check "GPUs visible to nvidia-smi" FAIL "none (not a GPU machine? use --cpu-smoke)"
  fi
  if command -v cuobjdump >/dev/null 2>&1; then
    local binary elves without=""
    for binary in "$BUNDLE"/bin/*; do
      # Read the whole listing first: `cuobjdump | grep -q` under pipefail
      # fails when grep stops reading early (SIGPIPE) on a long listing.
      elves=$(cuobjdump --list-elf "$binary" 2>/dev/null) || continue  # no CUDA code
      grep -q 'sm_90' <<<"$elves" || without+=" $(basename "$binary")"
    done
    if [[ -n $without ]]; then
      check "sm_90 machine code (cuobjdump)" FAIL "missing in:$without"
    else
      check "sm_90 machine code (cuobjdump)" PASS
    fi
  fi
}

# --- Tests -------------------------------------------------------------------

# The skips a run with every GPU present may still have: a case needing more
# devices than the machine has, or a CPU path this host's CPU lacks.
allowed_skip() {
  grep -qE 'needs [0-9]+ CUDA device\(s\), [0-9]+ visible|this CPU has no ' <<<"$1"
}

run_tests() {
  local binary name xml log rc tests failures skipped
  for binary in "$BUNDLE"/bin/*_test; do
    name=$(basename "$binary")
    xml=$LOGS/$name.xml
    log=$LOGS/$name.log
    rc=0
    if ((cpu_smoke)); then
      run_timed "$log" "$binary" --gtest_output="xml:$xml" || rc=$?
    else
      KINDLING_REQUIRE_GPU=$required_gpus run_timed "$log" "$binary" \
        --gtest_output="xml:$xml" || rc=$?
    fi
    if ((rc == 124 || rc == 137)); then
      check "$name" FAIL "timed out after ${step_timeout}s (log in results.tar.gz)"
      continue
    fi
    if [[ ! -s $xml ]]; then
      check "$name" FAIL "exit code $rc and no test report: $(tail -n 3 "$log" | tr '\n' ' ')"
      continue
    fi
    tests=$(grep -c '<testcase ' "$xml")
    failures=$(grep -c '<failure' "$xml")
    skipped=$(grep -c '<skipped' "$xml")
    local skip_messages disallowed=""
    # gtest writes "file:line&#x0A;message"; keep the message, count repeats.
    skip_messages=$(grep -o '<skipped message="[^"]*"' "$xml" |
      sed 's/<skipped message="//; s/"$//; s/^[^ ]*&#x0A;//' | sort | uniq -c |
      sed 's/^ *\([0-9]*\) \(.*\)/\1× \2;/')
    if ((!cpu_smoke && skipped > 0)); then
      while IFS= read -r line; do
        allowed_skip "$line" || disallowed+="$line; "
      done <<<"$skip_messages"
    fi
    if ((rc != 0 || failures > 0)) || [[ -n $disallowed ]]; then
      check "$name" FAIL "$tests tests, $failures failed, $skipped skipped, exit code $rc${disallowed:+; skips not allowed on a GPU machine: $disallowed}"
      ((rc != 0 || failures > 0)) && rerun_synchronously "$binary" "$xml"
    elif ((skipped > 0)); then
      check "$name" PASS "$tests tests, $skipped skipped:$(tr -s ' \n' ' ' <<<"$skip_messages")"
    else
      check "$name" PASS "$tests tests, none skipped"
    fi
  done
  if ((cpu_smoke)); then
    # Without a driver CUDA must say "no device", never "failed to
    # initialize" (which fails every GPU case).
    if grep -h 'CUDA failed to initialize' "$LOGS"/*.log "$LOGS"/*.xml >/dev/null 2>&1; then
      check "CUDA reports no device (not a failure)" FAIL "$(grep -h -m1 -o 'CUDA failed to initialize[^"<]*' "$LOGS"/*.xml | head -n 1)"
    elif grep -qh 'no CUDA device visible' "$LOGS"/*.xml; then
      check "CUDA reports no device (not a failure)" PASS "$(grep -h -m1 -o 'no CUDA device visible[^"<]*' "$LOGS"/*.xml | head -n 1)"
    else
      check "CUDA reports no device (not a failure)" FAIL "no GPU case said why it skipped"
    fi
  fi
}

# rerun_synchronously BINARY XML: the failed cases again, every launch waited
# for, so an asynchronous fault names its kernel.
rerun_synchronously() {
  ((cpu_smoke)) && return
  local binary=$1 xml=$2 name filter
  name=$(basename "$binary")
  filter=$(awk '/<testcase /{match($0, /name="[^"]*"/); n=substr($0, RSTART+6, RLENGTH-7); match($0, /classname="[^"]*"/); c=substr($0, RSTART+11, RLENGTH-12)} /<failure/{print c "." n}' "$xml" | sort -u | paste -sd: -)
  KINDLING_REQUIRE_GPU=$required_gpus KINDLING_CUDA_SYNC_LAUNCHES=1 \
    run_timed "$LOGS/$name.sync.log" "$binary" ${filter:+--gtest_filter="$filter"} || true
  check "$name, re-run with KINDLING_CUDA_SYNC_LAUNCHES=1" SKIP "see $name.sync.log: $(grep -m1 -E 'kindling: .*failed' "$LOGS/$name.sync.log" | cut -c1-300)"
}

run_sanitizer() {
  if ((cpu_smoke)); then
    return
  fi
  local sanitizer
  sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -n 1)
  if [[ -z $sanitizer ]]; then
    check "compute-sanitizer memcheck" FAIL "compute-sanitizer not found"
    return
  fi
  local rc=0
  KINDLING_REQUIRE_GPU=$required_gpus run_timed "$LOGS/memcheck.log" "$sanitizer" \
    --tool memcheck --error-exitcode 99 --print-limit 20 \
    "$BUNDLE/bin/cuda_backend_test" --gtest_output="xml:$LOGS/memcheck.xml" || rc=$?
  case $rc in
    0) check "compute-sanitizer memcheck, cuda_backend_test" PASS "$(grep -m1 'ERROR SUMMARY' "$LOGS/memcheck.log")" ;;
    124 | 137) check "compute-sanitizer memcheck, cuda_backend_test" FAIL "timed out after ${step_timeout}s" ;;
    99) check "compute-sanitizer memcheck, cuda_backend_test" FAIL "$(grep -m1 'ERROR SUMMARY' "$LOGS/memcheck.log") (memcheck.log)" ;;
    *) check "compute-sanitizer memcheck, cuda_backend_test" FAIL "exit code $rc from the tests under memcheck ($(grep -c '<failure' "$LOGS/memcheck.xml" 2>/dev/null || echo no) failures); $(grep -m1 'ERROR SUMMARY' "$LOGS/memcheck.log")" ;;
  esac
}

# --- Benches and examples ------------------------------------------------------

peer_python() {
  local python
  for python in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    if command -v "$python" >/dev/null 2>&1 &&
      "$python" -c 'import torch' >/dev/null 2>&1; then
      command -v "$python"
      return
    fi
  done
  echo /usr/bin/python3
}

# run_bench NAME ARGS...: one bench binary with JSON output. With
# bench_cores set (a taskset list), the bench runs on those cores only and
# its results are named NAME.coresLIST (plus .TAG with bench_tag set).
run_bench() {
  local name=$1
  shift
  local result=$name${bench_cores:+.cores$bench_cores}${bench_tag:+.$bench_tag}
  local json=$LOGS/$result.json rc=0
  local -a pin=()
  [[ -n ${bench_cores:-} ]] && pin=(taskset -c "$bench_cores")
  (cd "$BUNDLE" && KINDLING_REQUIRE_GPU=$required_gpus \
    KINDLING_TRAIN_BENCH_DATA=$BUNDLE/data KINDLING_PEER_PYTHON=$(peer_python) \
    run_timed "$LOGS/$result.log" "${pin[@]}" "$BUNDLE/bin/$name" "$@" \
    --benchmark_out="$json" --benchmark_out_format=json) || rc=$?
  name=$result
  if ((rc != 0)); then
    check "$name" FAIL "exit code $rc: $(tail -n 2 "$LOGS/$name.log" | tr '\n' ' ')"
  elif grep -q '"error_occurred": true' "$json" 2>/dev/null; then
    check "$name" FAIL "a benchmark reported an error: $(grep -m1 -o '"error_message": "[^"]*"' "$json")"
  elif ((cpu_smoke)) && grep -q 'skipped' "$LOGS/$name.log"; then
    check "$name" PASS "$(grep -m1 skipped "$LOGS/$name.log")"
  elif [[ ! -s $json ]]; then
    check "$name" FAIL "no JSON written"
  else
    check "$name" PASS "$(grep -c '"name"' "$json") results in $name.json"
  fi
}

run_kernels_bench() {
  run_bench cuda_kernels_bench --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true
}

run_benches() {
  if ((cpu_smoke)); then
    # Without a GPU the kernels bench says why and runs nothing.
    run_bench cuda_kernels_bench
    return
  fi
  run_kernels_bench
  run_bench device_load_bench --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true
  KINDLING_TRAIN_BENCH_SAMPLES=20000 run_bench train_bench \
    --benchmark_filter=Device --benchmark_repetitions=3
}

# The CPU training epochs against the machine's FLOP limit (train_bench's
# ratio_vs_flop_limit), on two cores of a machine nobody else is using: the
# 2-core machines Kindling is built on are shared and noisy. No peers; the
# bundle's 20000 training images.
run_cpu_epochs() {
  if ((cpu_smoke)); then
    check "train_bench CPU epochs" SKIP "not in --cpu-smoke (no quiet cores)"
    return
  fi
  bench_cores=0,1 KINDLING_TRAIN_BENCH_NO_PEER=1 \
    KINDLING_TRAIN_BENCH_SAMPLES=20000 run_bench train_bench \
    --benchmark_filter='BM_TrainEpoch(Mlp|Cnn)|BM_MlpEpochProducts|BM_MlpEpochVsProducts' \
    --benchmark_repetitions=3
}

# Data parallel over Gloo (no mpirun here): 2 ranks x 1 thread against 1
# process x 2 threads, on 2 cores (none spare: the all-reduce runs inline)
# and on 4 (a spare core: it runs on its own thread), then on 4 with 256 KiB
# buckets, so that the last layers' gradients go while backward goes on.
run_data_parallel() {
  if ((cpu_smoke)); then
    check "data_parallel_bench" SKIP "not in --cpu-smoke (no quiet cores)"
    return
  fi
  local cores
  for cores in 0,1 0-3; do
    bench_cores=$cores KINDLING_DP_BENCH_DATA=$BUNDLE/data \
      run_bench data_parallel_bench --benchmark_filter=gloo \
      --benchmark_repetitions=3
  done
  bench_cores=0-3 bench_tag=bucket256 KINDLING_DP_BENCH_DATA=$BUNDLE/data \
    KINDLING_DP_BENCH_FLAGS=--bucket_kib=256 run_bench data_parallel_bench \
    --benchmark_filter=gloo --benchmark_repetitions=3
}

run_examples() {
  local device=cuda:0
  ((cpu_smoke)) && device=cpu
  local name rc
  for name in quickstart cnn; do
    rc=0
    # Checkpoints go to a scratch directory, not into results.tar.gz (a
    # device call brings back at most 16 MiB a file).
    local -a args=(--device="$device" --data_dir="$BUNDLE/data" --epochs=2
      --out_dir="$SCRATCH/$name.out")
    ((cpu_smoke)) && args+=(--max_steps=20)
    run_timed "$LOGS/$name.log" "$BUNDLE/bin/$name" "${args[@]}" || rc=$?
    if ((rc == 0)); then
      check "$name --device=$device" PASS "$(grep -m1 -iE 'test accuracy' "$LOGS/$name.log" | cut -c1-200)"
    else
      check "$name --device=$device" FAIL "exit code $rc: $(tail -n 3 "$LOGS/$name.log" | tr '\n' ' ')"
    fi
  done
  ((cpu_smoke)) || run_nccl_rank
}

# An example launched as one rank of an NCCL job (a machine with one GPU can
# hold no second): the rendezvous through the store, NCCL's communicator on
# cuda:LOCAL_RANK and the example's check that --device names that GPU. With
# one rank the Trainer makes no collective calls (it skips them at world size
# 1); those run in nccl_communicator_test.
run_nccl_rank() {
  local name="quickstart, one NCCL rank" rc=0
  RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 \
    MASTER_PORT=29531 run_timed "$LOGS/quickstart_nccl.log" \
    "$BUNDLE/bin/quickstart" --backend=nccl --device=cuda \
    --data_dir="$BUNDLE/data" --epochs=1 --out_dir="$SCRATCH/quickstart_nccl.out" ||
    rc=$?
  if ((rc == 0)); then
    check "$name" PASS "$(grep -m1 -iE 'test accuracy' "$LOGS/quickstart_nccl.log" | cut -c1-200)"
  else
    check "$name" FAIL "exit code $rc: $(tail -n 3 "$LOGS/quickstart_nccl.log" | tr '\n' ' ')"
  fi
}

# --- Main ----------------------------------------------------------------------

echo "run_on_gpu.sh: steps $steps$( ((cpu_smoke)) && echo ', --cpu-smoke'), results in $out"
record_environment
setup_libraries
check_libraries
wants_step tests && run_tests
wants_step sanitizer && run_sanitizer
if wants_step benches; then
  run_benches
elif wants_step kernels && ! ((cpu_smoke)); then
  run_kernels_bench
fi
wants_step examples && run_examples
wants_step cpu && run_cpu_epochs
wants_step dp && run_data_parallel

tar -C "$LOGS" -czf "$out/results.tar.gz" . 2>/dev/null
rm -rf "$LOGS" "$SCRATCH" "${minimal_libs:-/nonexistent}"
if ((checks_failed > 0)); then
  echo "FAIL: $checks_failed check(s) failed" | tee -a "$SUMMARY"
  exit 1
fi
echo "PASS: every check passed" | tee -a "$SUMMARY"
exit 0
