#!/usr/bin/env bash
# gloo_collectives_test.sh WORKER: runs gloo_worker as 2, 3 and 4 ranks on
# 127.0.0.1, started through the launch variables as torchrun or
# kindling-launch would (RunCollectiveChecks on the Gloo communicator), then
# a job whose rank 1 dies mid-collective (the others must fail naming rank 1
# within seconds) and one whose rank 1 stays silent (DeadlineExceeded after
# the 2 s timeout), and a job that meets through a shared directory
# (KINDLING_STORE_PATH) instead. Every surviving rank must print `rank R: 0
# failures`.
set -euo pipefail

worker="$1"
failed=0

# free_port: a port nothing listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# run_job NP NAME [WORKER FLAGS...]: NP ranks, all ending within 60 s.
run_job() {
  local np="$1" name="$2"
  shift 2
  local port
  port=$(free_port)
  local pids=()
  for ((rank = 0; rank < np; ++rank)); do
    if [[ -n "${KINDLING_STORE_PATH:-}" ]]; then
      RANK=${rank} WORLD_SIZE=${np} \
        timeout 60 "${worker}" "$@" >"${TEST_TMPDIR}/${name}.${rank}.log" 2>&1 &
      pids+=($!)
      continue
    fi
    RANK=${rank} WORLD_SIZE=${np} MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} \
      timeout 60 "${worker}" "$@" >"${TEST_TMPDIR}/${name}.${rank}.log" 2>&1 &
    pids+=($!)
  done
  for pid in "${pids[@]}"; do wait "${pid}" || true; done
  local ok=1
  for ((rank = 0; rank < np; ++rank)); do
    [[ "$*" == *--mode=* && ${rank} -eq 1 ]] && continue
    if ! grep -q "^rank ${rank}: 0 failures$" "${TEST_TMPDIR}/${name}.${rank}.log"; then
      echo "${name}: rank ${rank} did not report 0 failures:"
      grep -v '^PASS ' "${TEST_TMPDIR}/${name}.${rank}.log" || true
      ok=0
    fi
  done
  grep -h 'AllReduce returned' "${TEST_TMPDIR}/${name}".*.log || true
  echo "${name}: $([[ ${ok} -eq 1 ]] && echo ok || echo FAILED)"
  [[ ${ok} -eq 1 ]] || failed=1
}

run_job 2 np2
# Through a shared directory instead of rank 0's TCP store.
mkdir -p "${TEST_TMPDIR}/store"
# (Its ranks install their own SIGPIPE handler, which connecting must keep.)
KINDLING_STORE_PATH="${TEST_TMPDIR}/store" run_job 2 file_store \
  --own_sigpipe_handler
run_job 3 np3
run_job 4 np4
run_job 3 die --mode=die --timeout_s=20
run_job 2 skip --mode=skip --timeout_s=2

if [[ ${failed} -ne 0 ]]; then
  echo "FAILED"
  exit 1
fi
echo "PASSED"
