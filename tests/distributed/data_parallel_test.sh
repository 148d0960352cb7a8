#!/usr/bin/env bash
# data_parallel_test.sh WORKER LAUNCHER: data-parallel training gives the
# single-process result, and survives losing a rank or a preemption notice.
#
# 1. One process with batch 128, then 2 ranks x batch 64 through
#    kindling-launch (Gloo) and under mpirun (MPI), and 2 ranks x 2
#    accumulated micro-batches of 32, 20 Adam steps from the same data
#    order: the same per-step losses (mean over ranks) and final weights
#    within 1e-5 relative.
# 2. Rank 1 dies at step 12 (Gloo): rank 0 fails within seconds naming rank
#    1; the checkpoint of step 10 is intact; 2 ranks resume from it and end
#    with the uninterrupted run's weights.
# 3. Rank 1 gets SIGTERM at step 7: both ranks stop at step 7 with exit 75
#    after rank 0 saved; resuming on 2 ranks, and on 1 rank x batch 128,
#    ends with the uninterrupted weights.
# 4. Bad launches fail before training with a message naming the problem:
#    a model that differs on rank 1, RANK >= WORLD_SIZE, a missing
#    MASTER_PORT, a MASTER_PORT already in use.
set -euo pipefail
# shellcheck source=tests/distributed/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_env.sh"

worker="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
launcher="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"
t="${TEST_TMPDIR}"

fail() {
  echo "FAIL: $*"
  exit 1
}

# compare A B NAME: weights files within 1e-5 relative per tensor.
compare() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
def read(path):
    out = {}
    for line in open(path):
        name, _, values = line.partition(":")
        out[name] = [float.fromhex(v) for v in values.split()]
    return out
a, b, name = read(sys.argv[1]), read(sys.argv[2]), sys.argv[3]
assert a.keys() == b.keys() and a, f"{name}: different tensors"
worst = 0.0
for key in a:
    scale = max(max(abs(v) for v in a[key]), 1e-12)
    diff = max(abs(x - y) for x, y in zip(a[key], b[key]))
    worst = max(worst, diff / scale)
print(f"{name}: weights differ by {worst:.3g} relative")
sys.exit(0 if worst <= 1e-5 else 1)
PY
}

# mean_losses LOG...: "step mean-loss" over the logs' `loss` lines.
mean_losses() {
  cat "$@" | awk '$1 == "loss" { sum[$2] += $3; n[$2]++ }
    END { for (s in sum) printf "%d %.9g\n", s, sum[s] / n[s] }' | sort -n
}


# --- 1. The same result on 1 and 2 ranks ------------------------------------
"${worker}" --batch=128 --out="${t}/single.txt" >"${t}/single.log" 2>&1 ||
  { cat "${t}/single.log"; fail "the single process failed"; }
grep -q '^rank 0: done, step 20' "${t}/single.log" || fail "single: not 20 steps"

timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --backend=gloo --out='${t}/gloo.txt' >${t}/gloo.\${RANK}.log 2>&1" ||
  { cat "${t}"/gloo.*.log; fail "the Gloo job failed"; }
grep -q '^rank 1: done, step 20' "${t}/gloo.1.log" || fail "gloo: rank 1 not done"
compare "${t}/single.txt" "${t}/gloo.txt" "1 rank x 128 vs 2 Gloo ranks x 64"

timeout 120 mpirun "${mpirun_flags[@]}" -np 2 --output-filename "${t}/mpi" \
  "${worker}" --batch=64 --out="${t}/mpi.txt" >/dev/null 2>&1 ||
  { cat "${t}"/mpi/1/rank.*/stdout; fail "the MPI job failed"; }
compare "${t}/single.txt" "${t}/mpi.txt" "1 rank x 128 vs 2 MPI ranks x 64"

# The test-set accuracy, evaluated in shards: both ranks report the same
# figures, those of the single process (within one of the 250 samples, as
# the weights agree to 1e-5, not bit for bit).
accuracies() { grep -o 'epoch [0-9]* test_accuracy .*' "$1"; }
for job in gloo mpi; do
  if [[ ${job} == gloo ]]; then
    rank0="${t}/gloo.0.log" rank1="${t}/gloo.1.log"
  else
    rank0="${t}/mpi/1/rank.0/stdout" rank1="${t}/mpi/1/rank.1/stdout"
  fi
  [[ $(accuracies "${rank0}" | wc -l) -eq 4 ]] || fail "${job}: rank 0 has no accuracy for each of 4 epochs"
  [[ "$(accuracies "${rank0}")" == "$(accuracies "${rank1}")" ]] ||
    fail "${job}: ranks 0 and 1 report different accuracies"
  python3 - "${t}/single.log" "${rank0}" "${job}" <<'PY' || fail "${job}: accuracy differs from the single process's"
import re, sys
def read(path):
    return [float(m.group(1)) for m in re.finditer(r"test_accuracy (\S+)", open(path).read())]
a, b = read(sys.argv[1]), read(sys.argv[2])
worst = max(abs(x - y) for x, y in zip(a, b))
print(f"{sys.argv[3]}: test accuracy {b[-1]} on 2 ranks, {a[-1]} alone (largest gap {worst:.3g})")
sys.exit(0 if len(a) == len(b) == 4 and worst <= 1 / 250 + 1e-12 else 1)
PY
done

# Gradient accumulation: 2 ranks x 2 micro-batches of 32 step as 1 x 128.
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=32 --accumulate=2 --out='${t}/accumulate.txt' >${t}/accumulate.\${RANK}.log 2>&1" ||
  { cat "${t}"/accumulate.*.log; fail "the accumulating job failed"; }
grep -q '^rank 0: done, step 20' "${t}/accumulate.0.log" || fail "accumulate: not 20 optimizer steps"
compare "${t}/single.txt" "${t}/accumulate.txt" "1 rank x 128 vs 2 ranks x 2 micro-batches x 32"

mean_losses "${t}/single.log" >"${t}/single.losses"
mean_losses "${t}"/gloo.*.log >"${t}/gloo.losses"
python3 - "${t}/single.losses" "${t}/gloo.losses" <<'PY'
import sys
a = [tuple(map(float, l.split())) for l in open(sys.argv[1])]
b = [tuple(map(float, l.split())) for l in open(sys.argv[2])]
assert len(a) == len(b) == 20, (len(a), len(b))
worst = max(abs(x[1] - y[1]) / abs(x[1]) for x, y in zip(a, b))
print(f"per-step losses (mean over ranks) differ by {worst:.3g} relative")
sys.exit(0 if worst <= 1e-5 else 1)
PY

# --- 2. A rank dies mid-run ---------------------------------------------------
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
port=$(free_port)
start=${SECONDS}
for rank in 0 1; do
  RANK=${rank} WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} \
    timeout 60 "${worker}" --batch=64 --out_dir="${t}/kill" --die_rank=1 \
    --die_step=12 >"${t}/kill.${rank}.log" 2>&1 &
  pids[rank]=$!
done
status0=0
wait "${pids[0]}" || status0=$?
wait "${pids[1]}" || true
echo "rank 0 exited ${status0} after $((SECONDS - start)) s: $(grep '^error' "${t}/kill.0.log" || true)"
[[ ${status0} -eq 1 ]] || fail "rank 0 should fail when rank 1 dies"
grep -q 'rank 1 is lost' "${t}/kill.0.log" || fail "rank 0's error should name rank 1"
[[ $(cat "${t}/kill/latest") == step-00000010 ]] || fail "latest is $(cat "${t}/kill/latest"), not step 10"
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --out_dir='${t}/kill' --resume --out='${t}/kill.txt' >${t}/resume.\${RANK}.log 2>&1" ||
  { cat "${t}"/resume.*.log; fail "resuming after the lost rank failed"; }
compare "${t}/gloo.txt" "${t}/kill.txt" "resumed after a lost rank vs uninterrupted"

# --- 3. Preemption --------------------------------------------------------------
status=0
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --out_dir='${t}/pre' --signal_rank=1 --signal_step=7 >${t}/pre.\${RANK}.log 2>&1" ||
  status=$?
[[ ${status} -eq 75 ]] || { cat "${t}"/pre.*.log; fail "a preempted job should exit 75, not ${status}"; }
grep -q '^rank 0: stopped, step 7' "${t}/pre.0.log" || fail "rank 0 did not stop at step 7"
grep -q '^rank 1: stopped, step 7' "${t}/pre.1.log" || fail "rank 1 did not stop at step 7"
# Rank 0 was not signalled itself, but reports the job's stop signal too.
grep -q '^rank 0: stopped, step 7, signal 15' "${t}/pre.0.log" ||
  fail "rank 0 should report SIGTERM (15), the signal rank 1 got"
[[ $(cat "${t}/pre/latest") == step-00000007 ]] || fail "latest is $(cat "${t}/pre/latest"), not step 7"
cp -r "${t}/pre" "${t}/pre1"
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --out_dir='${t}/pre' --resume --out='${t}/pre.txt' >${t}/pre_resume.\${RANK}.log 2>&1" ||
  { cat "${t}"/pre_resume.*.log; fail "resuming after preemption failed"; }
compare "${t}/gloo.txt" "${t}/pre.txt" "resumed after SIGTERM vs uninterrupted"
"${worker}" --batch=128 --out_dir="${t}/pre1" --resume --out="${t}/pre1.txt" \
  >"${t}/pre1.log" 2>&1 || { cat "${t}/pre1.log"; fail "resuming on 1 rank failed"; }
compare "${t}/single.txt" "${t}/pre1.txt" "2-rank checkpoint resumed on 1 rank x 128 vs single"
# With dropout each rank draws its own masks (the seed mixed with the rank),
# and a preempted job still resumes exactly, rank 1's stream included.
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --dropout=0.2 --out='${t}/drop.txt' >${t}/drop.\${RANK}.log 2>&1" ||
  { cat "${t}"/drop.*.log; fail "the dropout job failed"; }
status=0
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --dropout=0.2 --out_dir='${t}/droppre' --signal_rank=0 --signal_step=9 >${t}/droppre.\${RANK}.log 2>&1" ||
  status=$?
[[ ${status} -eq 75 ]] || { cat "${t}"/droppre.*.log; fail "the preempted dropout job should exit 75, not ${status}"; }
timeout 120 "${launcher}" --nproc=2 -- bash -c \
  "exec '${worker}' --batch=64 --dropout=0.2 --out_dir='${t}/droppre' --resume --out='${t}/droppre.txt' >${t}/droppre_resume.\${RANK}.log 2>&1" ||
  { cat "${t}"/droppre_resume.*.log; fail "resuming the dropout job failed"; }
compare "${t}/drop.txt" "${t}/droppre.txt" "with dropout: resumed after SIGTERM vs uninterrupted"

# --- 4. Bad launches ------------------------------------------------------------
# run_pair NAME FLAGS...: two Gloo ranks; both logs kept.
run_pair() {
  local name="$1"
  shift
  local port
  port=$(free_port)
  for rank in 0 1; do
    RANK=${rank} WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} \
      timeout 60 "${worker}" "$@" >"${t}/${name}.${rank}.log" 2>&1 &
    pids[rank]=$!
  done
  for rank in 0 1; do
    if wait "${pids[rank]}"; then fail "${name}: rank ${rank} should fail"; fi
  done
}
run_pair mismatch --batch=64 --mismatch_rank=1
grep -q "the model on rank 1 differs from rank 0's: 'fc1.weight' has shape \[16, 33\] here but \[16, 32\] on rank 0" \
  "${t}/mismatch.1.log" || { cat "${t}/mismatch.1.log"; fail "rank 1 should name its differing leaf"; }
grep -q "the model on rank 1 differs from rank 0's" "${t}/mismatch.0.log" ||
  { cat "${t}/mismatch.0.log"; fail "rank 0 should name rank 1"; }
grep -q '^loss' "${t}/mismatch.0.log" && fail "training started despite the mismatch"
echo "a differing model: $(grep -o 'the model on rank 1 .*' "${t}/mismatch.1.log")"

expect_launch_error() {
  local name="$1" pattern="$2"
  shift 2
  if env "$@" "${worker}" --batch=64 >"${t}/${name}.log" 2>&1; then
    fail "${name}: the worker should refuse to start"
  fi
  grep -q -- "${pattern}" "${t}/${name}.log" || { cat "${t}/${name}.log"; fail "${name}: no '${pattern}'"; }
  echo "${name}: $(grep '^error' "${t}/${name}.log")"
}
expect_launch_error rank_too_big "RANK=2 is not below WORLD_SIZE=2" \
  RANK=2 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29999
expect_launch_error no_port "MASTER_PORT" RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1
# A port something else listens on (held by a Python listener).
busy_port=$(free_port)
python3 -c "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',${busy_port})); s.listen(); time.sleep(30)" &
holder=$!
sleep 0.5
expect_launch_error port_in_use "127.0.0.1:${busy_port}" \
  RANK=0 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=${busy_port}
kill "${holder}"
echo "PASSED"
