# Sourced by the tests that start MPI jobs: where Open MPI keeps its files,
# and the mpirun flags that work in a test sandbox and a CI container.
#
# Open MPI keeps its session directory under TMPDIR and reads ~/.openmpi:
# both inside the test's own directory, so that concurrent tests and the
# user's settings do not interfere.
export HOME="${TEST_TMPDIR}" TMPDIR="${TEST_TMPDIR}"
# --allow-run-as-root: CI containers run as root. --oversubscribe: more
# ranks than cores. --bind-to none: ranks pinned to one core each would
# fight over it when oversubscribed. plm isolated: launch on this machine
# only, never through ssh. pml ob1 with btl self,vader: shared memory
# between the ranks, no network interface needed. (vader's single copy through
# process_vm_readv, refused in containers without CAP_SYS_PTRACE, is turned
# off by ConnectMpi itself: the tests check that.)
# shellcheck disable=SC2034  # used by the scripts that source this file
readonly mpirun_flags=(
  --allow-run-as-root --oversubscribe --bind-to none
  --mca plm isolated
  --mca pml ob1 --mca btl self,vader
)
