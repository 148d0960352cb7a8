#!/usr/bin/env bash
# mpi_timeout_test.sh WORKER: a peer that never joins a collective is an
# error within the timeout, never a hang.
#
#   skip: rank 1 sleeps through an AllReduce. Rank 0 must get DeadlineExceeded
#         naming AllReduce within its 2 s timeout (+ 2 s), and its exit must
#         end the job (MPI_Abort; rank 1 would otherwise wait in MPI_Finalize).
#   die:  rank 1 ends without MPI_Finalize while rank 0 waits in an
#         AllReduce; mpirun must end the job.
# Each mpirun runs under `timeout 60`: reaching it is a hang, a failure.
set -euo pipefail
# shellcheck source=tests/distributed/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_env.sh"

worker="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
readonly worker

failed=0
fail() {
  echo "FAIL: $*"
  failed=1
}

# run_job NAME WORKER FLAGS...: sets `status`, `took` and `log`.
run_job() {
  local name="$1"
  shift
  log="${TEST_TMPDIR}/${name}.log"
  local start=${SECONDS}
  status=0
  timeout 60 mpirun "${mpirun_flags[@]}" -np 2 "${worker}" "$@" \
    >"${log}" 2>&1 || status=$?
  took=$((SECONDS - start))
  echo "${name}: mpirun exited ${status} after ${took} s"
  cat "${log}"
  if [[ ${status} -eq 124 ]]; then
    fail "${name}: mpirun hung (killed after 60 s)"
  fi
}

run_job skip --mode=skip --timeout_s=2
grep -q "^rank 0: 0 failures$" "${log}" ||
  fail "skip: rank 0 did not see DeadlineExceeded naming AllReduce in time"
# MPI_Abort makes the job's status non-zero: the job did not succeed.
[[ ${status} -ne 0 ]] || fail "skip: mpirun exited 0 after a failed collective"
# Rank 1 sleeps 5 s; the job should end soon after rank 0's error at 2 s.
[[ ${took} -le 20 ]] || fail "skip: the job took ${took} s to end"

run_job die --mode=die --timeout_s=2
[[ ${status} -ne 0 ]] || fail "die: mpirun exited 0 though rank 1 died"
[[ ${took} -le 20 ]] || fail "die: the job took ${took} s to end"

if [[ ${failed} -ne 0 ]]; then
  echo "FAILED"
  exit 1
fi
echo "PASSED"
