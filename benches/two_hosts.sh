#!/usr/bin/env bash
# two_hosts.sh: Gloo all-reduce between two "hosts" on one machine.
#
# What it measures: benches/allreduce_bench with rank 0 and rank 1 in two
# network namespaces joined by a veth pair (10.231.0.1/24 <-> 10.231.0.2/24),
# so the Gloo traffic crosses a real (virtual) network link and the kernel's
# full TCP/IP path instead of loopback, and each host is pinned to its own
# cores (taskset; --cpus, --no-pin). With --rate / --delay the link is shaped with tc, in each
# direction, to look like a datacenter network. Rank 0 prints the usual
# BM_AllReduce/BYTES (us_per_op, bus_GBps, memcpy_GBps, ratio_vs_memcpy) and
# BM_Latency rows.
#
# Usage:
#   tools/bazel build //benches:allreduce_bench
#   sudo benches/two_hosts.sh [--rate RATE] [--delay DELAY] [--burst SIZE]
#       [--port PORT] [--cpus A:B | --no-pin] [--bench PATH] [-- BENCH_ARGS...]
#
#   --rate RATE    tc rate of each direction, e.g. 10gbit, 25gbit, 800mbit
#                  (tc's units: "bit" suffixes are bits/s, "bps" bytes/s);
#                  a tbf qdisc. Default: no rate limit.
#   --delay DELAY  one-way delay added to each direction, e.g. 0.05ms, 50us
#                  (round trip: twice that); a netem qdisc. Default: none.
#   --burst SIZE   tbf bucket size (default: 1 ms at RATE, at least 256kb).
#   --port PORT    MASTER_PORT of rank 0's rendezvous store (default 29500).
#   --cpus A:B     the cores of host A (rank 0) and host B (rank 1), as
#                  taskset lists: 0:1 (the default), 0-3:4-7, 0,2:1,3.
#   --no-pin       no taskset: both ranks may run on any core.
#   --bench PATH   the benchmark binary (default bazel-bin/benches/
#                  allreduce_bench under this repository).
#   -- ARGS        passed to the benchmark, e.g.
#                  -- --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#
# Examples:
#   sudo benches/two_hosts.sh -- --benchmark_repetitions=3 \
#       --benchmark_report_aggregates_only=true
#   sudo benches/two_hosts.sh --rate 10gbit --delay 0.05ms -- \
#       --benchmark_filter=BM_AllReduce/67108864
#
# Requirements: root (it creates network namespaces and veth links), iproute2
# (`ip`; `tc` for --rate/--delay), util-linux's taskset, and for --delay a
# kernel with the netem qdisc (CONFIG_NET_SCH_NETEM / sch_netem); --rate uses
# tbf (CONFIG_NET_SCH_TBF). It fails with a message naming what is missing.
# The namespaces (kindling-a-PID, kindling-b-PID) and the veth pair are
# always removed on exit, including on failure and Ctrl-C.
#
# Pinning: each rank is a process with a Gloo I/O thread beside the caller's
# thread, and Gloo's I/O thread can spin in epoll_wait (perf: milliseconds
# on-CPU in epoll_wait/tcp_poll) while the caller's thread, the one it waits
# for, is runnable. With ONE core per host the two then take turns a scheduler
# tick at a time: on a HZ=250 kernel every small all-reduce costs ~4 ms (on a
# 2-core VM, idle: 1 KiB 4.0 ms pinned 0:1, 0.4-0.8 ms with --no-pin; the
# same pinned over loopback inside one namespace). Real hosts have more than
# one core: give each host two or more (--cpus 0-1:2-3) where the machine has
# them, or compare with --no-pin, before reading small sizes as network cost.
#
# Not a test: CI machines often may not create namespaces, so nothing runs
# this automatically. Run it by hand and compare against the same machine's
# loopback numbers in the same sitting:
#   bazel-bin/benches/allreduce_bench                  # Gloo over loopback
#   mpirun -np 2 bazel-bin/benches/allreduce_bench     # MPI shared memory
# Other processes on the machine (builds) make the numbers noisy: check
# `uptime` first, and use --benchmark_repetitions with the medians.
set -euo pipefail

readonly ADDR_A=10.231.0.1
readonly ADDR_B=10.231.0.2
readonly NS_A="kindling-a-$$"
readonly NS_B="kindling-b-$$"
# Interface names are at most 15 characters: "kveth-a-" + a 7-digit PID.
readonly VETH_A="kveth-a-$$"
readonly VETH_B="kveth-b-$$"

die() {
  echo "two_hosts.sh: $*" >&2
  exit 1
}

usage() {
  sed -n '/^# Usage:/,/^# Examples:/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
  exit "${1:-2}"
}

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rate=""
delay=""
burst=""
port=29500
cpus="0:1"
pin=1
bench="${repo_root}/bazel-bin/benches/allreduce_bench"
bench_args=()

while (($# > 0)); do
  case "$1" in
    --rate) (($# >= 2)) || die "--rate needs a value"; rate="$2"; shift 2 ;;
    --rate=*) rate="${1#*=}"; shift ;;
    --delay) (($# >= 2)) || die "--delay needs a value"; delay="$2"; shift 2 ;;
    --delay=*) delay="${1#*=}"; shift ;;
    --burst) (($# >= 2)) || die "--burst needs a value"; burst="$2"; shift 2 ;;
    --burst=*) burst="${1#*=}"; shift ;;
    --port) (($# >= 2)) || die "--port needs a value"; port="$2"; shift 2 ;;
    --port=*) port="${1#*=}"; shift ;;
    --cpus) (($# >= 2)) || die "--cpus needs a value"; cpus="$2"; shift 2 ;;
    --cpus=*) cpus="${1#*=}"; shift ;;
    --no-pin) pin=0; shift ;;
    --bench) (($# >= 2)) || die "--bench needs a value"; bench="$2"; shift 2 ;;
    --bench=*) bench="${1#*=}"; shift ;;
    -h | --help) usage 0 ;;
    --) shift; bench_args=("$@"); break ;;
    *) echo "two_hosts.sh: unknown argument '$1'" >&2; usage ;;
  esac
done

if ! [[ "$port" =~ ^[0-9]+$ ]] || ((port < 1 || port > 65535)); then
  die "--port must be a TCP port (1-65535), got '$port'"
fi
[[ "$cpus" =~ ^([0-9,-]+):([0-9,-]+)$ ]] ||
  die "--cpus must be two taskset core lists A:B like 0:1 or 0-3:4-7, got '$cpus'"
cpu_a="${BASH_REMATCH[1]}"
cpu_b="${BASH_REMATCH[2]}"

# --- Preconditions, each with a message naming what is missing. -------------
((EUID == 0)) ||
  die "needs root to create network namespaces and veth links (run with sudo)"
command -v ip >/dev/null ||
  die "needs iproute2's 'ip' (apt-get install iproute2)"
command -v taskset >/dev/null ||
  die "needs util-linux's 'taskset' to pin each rank to a core"
if [[ -n "$rate" || -n "$delay" ]]; then
  command -v tc >/dev/null ||
    die "--rate/--delay need iproute2's 'tc' (apt-get install iproute2)"
fi
[[ -x "$bench" ]] ||
  die "no benchmark at $bench: build it with tools/bazel build //benches:allreduce_bench (or pass --bench PATH)"
if ((pin)); then
  for list in "$cpu_a" "$cpu_b"; do
    taskset -c "$list" true 2>/dev/null ||
      die "--cpus $cpus: cannot run on cores '$list' (this machine's online cores: $(cat /sys/devices/system/cpu/online 2>/dev/null || getconf _NPROCESSORS_ONLN))"
  done
  [[ "$cpu_a" != "$cpu_b" ]] ||
    echo "two_hosts.sh: warning: both hosts pinned to the same cores ($cpu_a)" >&2
fi

# rate_bytes_per_second RATE: tc's rate syntax in bytes/s, or nothing when the
# unit is not one of tc's.
rate_bytes_per_second() {
  awk -v r="$1" 'BEGIN {
    if (!match(r, /^[0-9]+(\.[0-9]+)?/)) exit
    n = substr(r, 1, RLENGTH); u = tolower(substr(r, RLENGTH + 1))
    m["bit"] = 1/8; m["kbit"] = 1e3/8; m["mbit"] = 1e6/8; m["gbit"] = 1e9/8
    m["tbit"] = 1e12/8; m["kibit"] = 1024/8; m["mibit"] = 1048576/8
    m["gibit"] = 1073741824/8; m["bps"] = 1; m["kbps"] = 1e3; m["mbps"] = 1e6
    m["gbps"] = 1e9; m["tbps"] = 1e12; m[""] = 1/8
    if (u in m) printf "%d\n", n * m[u]
  }'
}

if [[ -n "$rate" && -z "$burst" ]]; then
  rate_bps="$(rate_bytes_per_second "$rate")"
  [[ -n "$rate_bps" ]] ||
    die "cannot read --rate '$rate' (use tc units such as 10gbit or 800mbit, or pass --burst)"
  # One millisecond at the rate, and at least a few 64 KiB GSO segments.
  burst_bytes=$((rate_bps / 1000))
  ((burst_bytes >= 262144)) || burst_bytes=262144
  burst="${burst_bytes}b"
fi

# --- Cleanup: always, on success, failure and signals. ----------------------
pids=()
logdir=""
cleanup() {
  local status=$?
  trap - EXIT INT TERM HUP
  local pid
  for pid in "${pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  # Deleting a namespace destroys its end of the veth pair and so the pair.
  ip netns delete "$NS_A" 2>/dev/null || true
  ip netns delete "$NS_B" 2>/dev/null || true
  [[ -n "$logdir" ]] && rm -rf "$logdir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

logdir="$(mktemp -d "${TMPDIR:-/tmp}/kindling-two-hosts.XXXXXX")"

# --- The two hosts and the wire. --------------------------------------------
ip netns add "$NS_A" ||
  die "cannot create network namespace $NS_A (is this a container without CAP_SYS_ADMIN?)"
ip netns add "$NS_B" || die "cannot create network namespace $NS_B"
ip link add "$VETH_A" netns "$NS_A" type veth peer name "$VETH_B" netns "$NS_B" ||
  die "cannot create the veth pair (kernel without CONFIG_VETH?)"
ip -n "$NS_A" addr add "$ADDR_A/24" dev "$VETH_A"
ip -n "$NS_B" addr add "$ADDR_B/24" dev "$VETH_B"
for ns in "$NS_A" "$NS_B"; do ip -n "$ns" link set lo up; done
ip -n "$NS_A" link set "$VETH_A" up
ip -n "$NS_B" link set "$VETH_B" up

# shape NS DEV: the egress qdiscs of one end; applied to both ends, so each
# direction has the rate and the one-way delay.
shape() {
  local ns="$1" dev="$2" out
  local tbf=(tbf rate "$rate" burst "$burst" latency 50ms)
  if [[ -n "$delay" ]]; then
    # netem for the delay, with a queue deep enough for the bandwidth-delay
    # product; tbf below it for the rate.
    if ! out="$(ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: \
      netem delay "$delay" limit 100000 2>&1)"; then
      if [[ "$out" == *"kind is unknown"* ]]; then
        die "--delay needs the netem qdisc, which this kernel lacks (CONFIG_NET_SCH_NETEM / module sch_netem); run without --delay, or with --rate only (tbf)"
      fi
      die "tc netem delay '$delay' on $dev failed: $out"
    fi
    if [[ -n "$rate" ]]; then
      out="$(ip netns exec "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: \
        "${tbf[@]}" 2>&1)" || die "tc tbf rate '$rate' on $dev failed: $out"
    fi
  else
    if ! out="$(ip netns exec "$ns" tc qdisc add dev "$dev" root handle 1: \
      "${tbf[@]}" 2>&1)"; then
      if [[ "$out" == *"kind is unknown"* ]]; then
        die "--rate needs the tbf qdisc, which this kernel lacks (CONFIG_NET_SCH_TBF / module sch_tbf)"
      fi
      die "tc tbf rate '$rate' on $dev failed: $out"
    fi
  fi
}

link="veth ${ADDR_A} <-> ${ADDR_B}"
if [[ -n "$rate" || -n "$delay" ]]; then
  shape "$NS_A" "$VETH_A"
  shape "$NS_B" "$VETH_B"
  link+=", each direction:${rate:+ rate $rate (burst $burst)}${delay:+ delay $delay}"
else
  link+=", unshaped"
fi

if command -v ping >/dev/null &&
  ! ip netns exec "$NS_A" ping -c 1 -W 2 "$ADDR_B" >/dev/null 2>&1; then
  die "no connectivity from $NS_A to $ADDR_B over the veth pair"
fi

# --- The ranks. --------------------------------------------------------------
# Each rank sees only this job's launch variables (no stale LOCAL_* or
# mpirun's OMPI_COMM_WORLD_*); KINDLING_DIST_TOKEN passes through to both.
# exec (ip netns exec, taskset and env exec too): the background job's pid is
# the benchmark's own, so the cleanup's kill reaches it.
run_rank() {
  local ns="$1" cpu="$2" rank="$3" pinning=()
  ((pin)) && pinning=(taskset -c "$cpu")
  exec ip netns exec "$ns" "${pinning[@]}" env \
    -u LOCAL_RANK -u LOCAL_WORLD_SIZE -u OMPI_COMM_WORLD_RANK \
    -u OMPI_COMM_WORLD_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK \
    -u OMPI_COMM_WORLD_LOCAL_SIZE \
    RANK="$rank" WORLD_SIZE=2 MASTER_ADDR="$ADDR_A" MASTER_PORT="$port" \
    "$bench" "${bench_args[@]}"
}

if ((pin)); then
  hosts="$NS_A (rank 0, cores $cpu_a) -- $NS_B (rank 1, cores $cpu_b)"
else
  hosts="$NS_A (rank 0) -- $NS_B (rank 1), not pinned"
fi
echo "two_hosts: $hosts: $link" >&2
# Rank 0 (the store's host) prints; rank 1's stdout is /dev/null in the bench
# and its stderr is kept, shown if it fails.
run_rank "$NS_A" "$cpu_a" 0 &
pid0=$!
pids+=("$pid0")
run_rank "$NS_B" "$cpu_b" 1 2>"$logdir/rank1.stderr" &
pid1=$!
pids+=("$pid1")

# Whichever rank ends first: if it failed, the other would wait for it until
# the collective timeout (minutes), so stop that one now.
set +e
wait -n -p finished "$pid0" "$pid1"
first=$?
set -e
if ((first != 0)); then
  failed_rank=0
  [[ "$finished" == "$pid1" ]] && failed_rank=1
  echo "two_hosts.sh: rank $failed_rank exited with status $first; stopping the other rank" >&2
  for pid in "$pid0" "$pid1"; do kill -TERM "$pid" 2>/dev/null || true; done
fi
codes=()
for pid in "$pid0" "$pid1"; do
  set +e
  wait "$pid"
  codes+=($?)
  set -e
done
pids=()
if ((first != 0 || codes[0] != 0 || codes[1] != 0)); then
  if [[ -s "$logdir/rank1.stderr" ]]; then
    echo "two_hosts.sh: rank 1's stderr:" >&2
    sed 's/^/  rank 1: /' "$logdir/rank1.stderr" >&2
  fi
  die "the benchmark failed (exit status: rank 0 ${codes[0]}, rank 1 ${codes[1]})"
fi
