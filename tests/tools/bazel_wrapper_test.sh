#!/usr/bin/env bash
# Tests tools/bazel's set-up logic with fake dpkg-query, apt-get, sudo and id
# on PATH: nothing is installed for real.
set -uo pipefail

script="$TEST_SRCDIR/$TEST_WORKSPACE/tools/bazel"
[[ -f $script ]] || script="$(dirname "$0")/../../tools/bazel"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# make_fakes UID MISSING_PACKAGES HAVE_SUDO APT_SUCCEEDS
make_fakes() {
  local uid=$1 missing=$2 have_sudo=$3 apt_ok=$4
  rm -rf "$work/bin" && mkdir -p "$work/bin"
  : >"$work/calls"
  cat >"$work/bin/dpkg-query" <<FAKE
#!/usr/bin/env bash
shift 2  # -W -f=...
for pkg in "\$@"; do
  if [[ " $missing " == *" \$pkg "* ]]; then
    echo "dpkg-query: no packages found matching \$pkg" >&2
  else
    echo "installed \$pkg"
  fi
done
FAKE
  cat >"$work/bin/apt-get" <<FAKE
#!/usr/bin/env bash
echo "apt-get \$*" >>"$work/calls"
$([[ $apt_ok == yes ]] && echo 'exit 0' || echo 'echo "E: Unable to locate package"; exit 100')
FAKE
  echo "#!/usr/bin/env bash
echo $uid" >"$work/bin/id"
  if [[ $have_sudo == yes ]]; then
    cat >"$work/bin/sudo" <<FAKE
#!/usr/bin/env bash
[[ \$1 == -n ]] && exit 0
echo "sudo \$*" >>"$work/calls"
"\$@"
FAKE
  fi
  cat >"$work/bin/fake-bazel" <<FAKE
#!/usr/bin/env bash
echo "bazel ran with: \$*"
FAKE
  chmod +x "$work/bin"/*
}

# run_wrapper [ARGS...]: the script with ARGS (default: test //...).
run_wrapper() {
  (($# > 0)) || set -- test //...
  PATH="$work/bin:/usr/bin:/bin" BAZEL_REAL="$work/bin/fake-bazel" \
    bash "$script" "$@" >"$work/out" 2>"$work/err"
}

# 1. Everything installed: no apt-get, Bazel runs with the arguments.
make_fakes 0 "" yes yes
run_wrapper || fail "all installed: exit $?"
grep -q 'bazel ran with: test //...' "$work/out" || fail "all installed: bazel not run"
[[ -s $work/calls ]] && fail "all installed: apt-get was called: $(cat "$work/calls")"
[[ -s $work/err ]] && fail "all installed: unexpected stderr: $(cat "$work/err")"

# 2. Root with missing packages: apt-get installs exactly those.
make_fakes 0 "libabsl-dev libopenblas-dev" yes yes
run_wrapper || fail "root install: exit $?"
grep -q 'apt-get install .*libabsl-dev libopenblas-dev' "$work/calls" ||
  fail "root install: wrong apt-get call: $(cat "$work/calls")"
grep -q '^sudo' "$work/calls" && fail "root install: used sudo"
grep -q 'bazel ran with' "$work/out" || fail "root install: bazel not run"

# 3. Not root, sudo available: installs through sudo.
make_fakes 1000 "bazel-bootstrap" yes yes
run_wrapper || fail "sudo install: exit $?"
grep -q '^sudo apt-get install .*bazel-bootstrap' "$work/calls" ||
  fail "sudo install: no sudo apt-get: $(cat "$work/calls")"

# 4. Not root, no sudo: one-line explanation, exit 1, Bazel not run.
make_fakes 1000 "libgtest-dev" no yes
run_wrapper && fail "no sudo: exit 0"
[[ $(wc -l <"$work/err") -eq 1 ]] || fail "no sudo: not one line: $(cat "$work/err")"
grep -q 'not root, and sudo is not installed' "$work/err" || fail "no sudo: message: $(cat "$work/err")"
grep -q 'bazel ran' "$work/out" && fail "no sudo: bazel ran anyway"

# 5. apt-get fails: the apt output tail, then a one-line reason, exit 1.
make_fakes 0 "clang-14" yes no
run_wrapper && fail "apt failure: exit 0"
tail -n 1 "$work/err" | grep -q '^tools/bazel: apt-get could not install clang-14' ||
  fail "apt failure: last line: $(tail -n 1 "$work/err")"
grep -q 'bazel ran' "$work/out" && fail "apt failure: bazel ran anyway"

# 6. --install-only: installs the missing packages a workspace using Kindling
# needs, not the development ones, and runs no Bazel.
make_fakes 0 "libopenblas-dev python3-torch" yes yes
run_wrapper --install-only || fail "install-only: exit $?"
grep -q 'apt-get install .*libopenblas-dev' "$work/calls" ||
  fail "install-only: libopenblas-dev not installed: $(cat "$work/calls")"
grep -q 'python3-torch' "$work/calls" && fail "install-only: installed a development package"
grep -q 'bazel ran' "$work/out" && fail "install-only: bazel ran"

# 7. --list-packages: that same list, one a line, nothing installed or run.
make_fakes 0 "libopenblas-dev" yes yes
run_wrapper --list-packages || fail "list-packages: exit $?"
grep -qx 'libopenblas-dev' "$work/out" || fail "list-packages: libopenblas-dev missing: $(cat "$work/out")"
grep -qx 'python3-torch' "$work/out" && fail "list-packages: lists a development package"
[[ -s $work/calls ]] && fail "list-packages: apt-get was called"

if ((failures > 0)); then
  echo "$failures check(s) failed"
  exit 1
fi
echo "tools/bazel set-up logic: all 7 cases pass"
