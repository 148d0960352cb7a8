#!/bin/bash
# kindling-launch end to end: ranks get their variables, a failing rank
# stops the job with its status and leaves no process behind, signals reach
# every rank once, and mistakes are reported clearly.
#
#   local_launcher_test.sh path/to/kindling-launch
set -u

LAUNCH="$1"
T="$(mktemp -d "${TEST_TMPDIR:-/tmp}/local_launcher_test.XXXXXX")"
FAILED=0

fail() {
  echo "FAIL: $*" >&2
  FAILED=1
}

# alive PID: the process exists and is not a zombie.
alive() {
  local state
  state="$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null)" || return 1
  [ -n "$state" ] && [ "$state" != Z ]
}

# wait_files DIR N: waits (up to 10 s) until DIR holds N files.
wait_files() {
  local i
  for i in $(seq 100); do
    [ "$(ls "$1" 2>/dev/null | wc -l)" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# expect_gone DIR: every pid written in DIR's files is gone (within 5 s).
expect_gone() {
  local file pid i
  for file in "$1"/*; do
    pid="$(cat "$file")"
    for i in $(seq 50); do
      alive "$pid" || break
      sleep 0.1
    done
    if alive "$pid"; then
      fail "$(basename "$file") (pid $pid) outlived the launcher"
      kill -KILL "$pid" 2>/dev/null
    fi
  done
}

# --- All ranks succeed: each rank once, one port ------------------------------
out="$("$LAUNCH" --nproc 3 -- bash -c \
  'echo "rank=$RANK world=$WORLD_SIZE local=$LOCAL_RANK lws=$LOCAL_WORLD_SIZE addr=$MASTER_ADDR port=$MASTER_PORT"' \
  2>"$T/success.err")"
rc=$?
[ "$rc" -eq 0 ] || fail "3 successful ranks: exit $rc, want 0"
for rank in 0 1 2; do
  n="$(grep -c "^rank=$rank world=3 local=$rank lws=3 addr=127.0.0.1 port=[1-9]" <<<"$out")"
  [ "$n" -eq 1 ] || fail "rank $rank printed $n times: $out"
done
ports="$(sed 's/.*port=//' <<<"$out" | sort -u | wc -l)"
[ "$ports" -eq 1 ] || fail "ranks saw different ports: $out"

# --master_port is passed through.
out="$("$LAUNCH" --nproc 1 --master_port 29517 -- bash -c 'echo "$MASTER_PORT"' 2>/dev/null)"
[ "$out" = 29517 ] || fail "--master_port 29517: rank saw '$out'"

# --- One rank fails: the job stops with its status, nothing stays behind ------
mkdir "$T/pids"
start=$(date +%s)
"$LAUNCH" --nproc 3 -- bash -c '
  if [ "$RANK" = 1 ]; then
    for i in $(seq 100); do
      [ "$(ls "$0" | wc -l)" -ge 3 ] && exit 3
      sleep 0.1
    done
    exit 4
  fi
  if [ "$RANK" = 2 ]; then
    sleep 100 &                  # a child of the rank: its group is stopped too
    echo $! > "$0/grandchild"
  fi
  echo $$ > "$0/rank$RANK"
  exec sleep 100' "$T/pids" 2>"$T/fail.err"
rc=$?
elapsed=$(($(date +%s) - start))
[ "$rc" -eq 3 ] || fail "a rank exiting 3: launcher exited $rc, want 3"
[ "$elapsed" -le 8 ] || fail "a rank exiting 3: launcher took ${elapsed}s"
grep -q "rank 1 (pid [0-9]*) exited with status 3" "$T/fail.err" ||
  fail "no report of rank 1's failure: $(cat "$T/fail.err")"
[ -f "$T/pids/grandchild" ] || fail "rank 2 did not start its child"
expect_gone "$T/pids"

# --- A rank killed by a signal: 128 + signal -----------------------------------
"$LAUNCH" --nproc 2 -- bash -c \
  '[ "$RANK" = 0 ] && kill -KILL $$; exec sleep 100' 2>/dev/null
rc=$?
[ "$rc" -eq 137 ] || fail "a rank killed by SIGKILL: exit $rc, want 137"

# --- A program that does not exist -----------------------------------------------
"$LAUNCH" --nproc 2 -- /nonexistent/kindling_program 2>"$T/missing.err"
rc=$?
[ "$rc" -eq 127 ] || fail "missing program: exit $rc, want 127"
grep -q "cannot run '/nonexistent/kindling_program': No such file or directory" \
  "$T/missing.err" || fail "missing program message: $(cat "$T/missing.err")"
"$LAUNCH" --nproc 1 -- kindling_no_such_program_on_path 2>"$T/path.err"
rc=$?
[ "$rc" -eq 127 ] || fail "program not on PATH: exit $rc, want 127"
grep -q "cannot run 'kindling_no_such_program_on_path'" "$T/path.err" ||
  fail "program not on PATH message: $(cat "$T/path.err")"

# --- Signals to the launcher reach every rank exactly once ---------------------
# signal_job SIGNAL: starts 3 ranks that trap SIGNAL (recording it and
# exiting 0), sends SIGNAL to the launcher and sets rc to its exit status.
signal_job() {
  local sig="$1" dir="$T/$1"
  mkdir -p "$dir/ready" "$dir/got"
  "$LAUNCH" --nproc 3 --grace_seconds 10 -- bash -c '
    trap "echo $RANK >> $0/got/$RANK; exit 0" '"$sig"'
    sleep 100 &
    echo $$ > "$0/ready/$RANK"
    wait' "$dir" 2>"$dir/err" &
  local launcher=$!
  wait_files "$dir/ready" 3 || fail "$sig: ranks did not start"
  kill "-$sig" "$launcher"
  wait "$launcher"
  rc=$?
  for rank in 0 1 2; do
    n="$(cat "$dir/got/$rank" 2>/dev/null | wc -l)"
    [ "$n" -eq 1 ] || fail "$sig reached rank $rank $n times"
  done
  expect_gone "$dir/ready"
}

signal_job TERM
[ "$rc" -eq 143 ] || fail "SIGTERM: launcher exited $rc, want 143"
signal_job USR1 # passed on, does not stop the job: the ranks' status
[ "$rc" -eq 0 ] || fail "SIGUSR1: launcher exited $rc, want 0"
# A shell starts background jobs with SIGINT ignored unless job control is
# on; with it, SIGINT reaches the launcher as Ctrl-C would.
set -m
signal_job INT
set +m
[ "$rc" -eq 130 ] || fail "SIGINT: launcher exited $rc, want 130"

# --- Usage errors -----------------------------------------------------------------
# usage_error WANT ARGS...: kindling-launch ARGS exits 2 saying WANT.
usage_error() {
  local want="$1"
  shift
  "$LAUNCH" "$@" >/dev/null 2>"$T/usage.err"
  local rc=$?
  [ "$rc" -eq 2 ] || fail "kindling-launch $*: exit $rc, want 2"
  grep -q -- "$want" "$T/usage.err" ||
    fail "kindling-launch $*: no '$want' in: $(cat "$T/usage.err")"
}
usage_error "--nproc is required" -- true
usage_error "--nproc must be at least 1" --nproc -1 -- true
usage_error "no program" --nproc 2
usage_error "no program" --nproc 2 --

if [ "$FAILED" -ne 0 ]; then
  echo "local_launcher_test: FAILED" >&2
  exit 1
fi
echo "local_launcher_test: PASSED"
