#!/usr/bin/env bash
# Runs the quickstart briefly (60 training steps, then evaluation, checkpoint
# and reload) and checks the lazy tour, that the model learned something,
# and that the reloaded checkpoint evaluates exactly as the trained model;
# then on two ranks (--nproc=2, Gloo and MPI) and stopped by SIGTERM.
set -euo pipefail
output=$("$1" --max_steps=60 --epochs=1)
echo "$output"
grep -q 'tensor bytes allocated by Init(): 0' <<<"$output"
grep -q 'reloaded: test accuracy .*, matches: yes' <<<"$output"
accuracy=$(sed -n 's/^test accuracy of the trained model: \([0-9.]*\)$/\1/p' <<<"$output")
# 60 steps of 128 reach about 0.7; chance is 0.1.
awk -v a="$accuracy" 'BEGIN { exit !(a > 0.5) }'
grep -q '^quickstart: test accuracy' <<<"$output"
# --device: a spelling Device::Parse rejects is a clear error, and so is a
# device whose backend this build lacks (the default build has no CUDA; a
# --config=cuda build on a GPU trains there).
if output=$("$1" --device=tpu 2>&1); then exit 1; fi
grep -q -- '--device: invalid device "tpu" (expected cpu, cuda or cuda:N)' <<<"$output"
if ! output=$("$1" --device=cuda --max_steps=2 --epochs=1 2>&1); then
  grep -q -- '--device=cuda: this binary has no backend for cuda:0; build it with --config=cuda' <<<"$output"
fi
# --nproc=2: two data-parallel ranks of the quickstart (Gloo on 127.0.0.1);
# one copy of the output, the same self-check.
output=$("$1" --nproc=2 --max_steps=30 --epochs=1 --out_dir="${TEST_TMPDIR}/dp")
echo "$output"
grep -q 'data parallel: 2 ranks (gloo), 1 CPU threads each, 64 samples per rank per step' <<<"$output"
grep -q 'reloaded: test accuracy .*, matches: yes' <<<"$output"
[[ $(grep -c '^quickstart: test accuracy' <<<"$output") -eq 1 ]]
# --nproc=2 --backend=mpi: the same two ranks through mpirun (Open MPI keeps
# its session files under TMPDIR and reads ~/.openmpi: both the test's own).
output=$(HOME="${TEST_TMPDIR}" TMPDIR="${TEST_TMPDIR}" "$1" --nproc=2 \
  --backend=mpi --max_steps=30 --epochs=1 --out_dir="${TEST_TMPDIR}/mpi")
echo "$output"
grep -q 'data parallel: 2 ranks (mpi), 1 CPU threads each, 64 samples per rank per step' <<<"$output"
grep -q 'reloaded: test accuracy .*, matches: yes' <<<"$output"
[[ $(grep -c '^quickstart: test accuracy' <<<"$output") -eq 1 ]]
# Without mpirun on PATH: a clear error, no training.
if output=$(PATH=/nonexistent "$1" --nproc=2 --backend=mpi 2>&1); then exit 1; fi
grep -q -- '--nproc=2 --backend=mpi: cannot run mpirun (No such file or directory); install' <<<"$output"
# term_exits_75 NAME READY FLAGS...: runs the quickstart with FLAGS, sends it
# SIGTERM (a scheduler's preemption notice) 1.5 s after a line matching READY,
# and expects the run to stop at the next step with a checkpoint, evaluate
# the model as stopped, and exit 75.
term_exits_75() {
  local name="$1" ready="$2" log="${TEST_TMPDIR}/$1.log"
  shift 2
  "${quickstart}" --epochs=50 --out_dir="${TEST_TMPDIR}/${name}" "$@" >"${log}" 2>&1 &
  local pid=$!
  for _ in $(seq 300); do
    grep -q "${ready}" "${log}" 2>/dev/null && break
    sleep 0.1
  done
  sleep 1.5
  kill -TERM "${pid}"
  local status=0
  wait "${pid}" || status=$?
  cat "${log}"
  [[ ${status} -eq 75 ]]
  grep -q 'stopped by SIGTERM: exit 75, --resume continues' "${log}"
  grep -q 'reloaded: test accuracy .*, matches: yes' "${log}"
}
quickstart="$1"
term_exits_75 term '^Part 2: training'
# The same through mpirun: the launcher relays SIGTERM to the ranks (sent to
# mpirun, it would end the job with status 1).
HOME="${TEST_TMPDIR}" TMPDIR="${TEST_TMPDIR}" term_exits_75 mpi_term \
  '^data parallel: 2 ranks (mpi)' --nproc=2 --backend=mpi
