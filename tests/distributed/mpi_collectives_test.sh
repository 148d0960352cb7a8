#!/usr/bin/env bash
# mpi_collectives_test.sh WORKER: runs collectives_worker (RunCollectiveChecks
# on the MPI communicator) under mpirun with 2, 3 and 4 ranks, and with 3 ranks
# in MPI calls of at most 1000 elements (the splitting of buffers above
# INT_MAX, reached with small ones), and with 3 ranks on the ring algorithm.
# Every rank must print `rank R: 0 failures`. Each run takes 1-2 s on 2
# cores.
set -euo pipefail
# shellcheck source=tests/distributed/mpi_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/mpi_env.sh"

worker="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
readonly worker


failed=0

# run_job NP NAME [WORKER FLAGS...]: one mpirun, which must end within 60 s
# with every rank reporting no failure.
run_job() {
  local np="$1" name="$2"
  shift 2
  local log="${TEST_TMPDIR}/${name}.log"
  local start=${SECONDS}
  local status=0
  timeout 60 mpirun "${mpirun_flags[@]}" -np "${np}" "${worker}" "$@" \
    >"${log}" 2>&1 || status=$?
  echo "${name}: mpirun exited ${status} after $((SECONDS - start)) s"
  local ok=1
  if [[ ${status} -ne 0 ]]; then
    [[ ${status} -eq 124 ]] && echo "${name}: mpirun did not end within 60 s"
    ok=0
  fi
  for ((rank = 0; rank < np; ++rank)); do
    if ! grep -q "^rank ${rank}: 0 failures$" "${log}"; then
      echo "${name}: rank ${rank} did not report 0 failures"
      ok=0
    fi
  done
  if [[ ${ok} -eq 0 ]]; then
    failed=1
    grep -v '^PASS ' "${log}" || true
  fi
}

# ConnectMpi starts Open MPI with the all-reduce algorithm and the
# shared-memory copy it measured fastest unless the job chose them: the runs
# check that Open MPI took them, and the last one that a job's own choice
# (algorithm 1, the ring, set in the environment) is kept and gives the same
# results.
readonly kindling_settings=coll_libnbc_iallreduce_algorithm=rabenseifner,btl_vader_single_copy_mechanism=none
run_job 2 np2 --expect_mca="${kindling_settings}"
run_job 3 np3 --expect_mca="${kindling_settings}"
run_job 4 np4 --expect_mca="${kindling_settings}"
run_job 3 np3_max_count_1000 --max_count=1000
OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 run_job 3 np3_ring \
  --expect_mca=coll_libnbc_iallreduce_algorithm=ring

if [[ ${failed} -ne 0 ]]; then
  echo "FAILED"
  exit 1
fi
echo "PASSED"
