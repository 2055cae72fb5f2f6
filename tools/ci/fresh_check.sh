#!/usr/bin/env bash
# fresh_check.sh - the README's set-up on a fresh Debian 12, proven: in a
# clean debian:bookworm container, a clone of the repository and the
# README's two commands, in order (make fresh-check; .ci/run runs it).
#
#   bash tools/ci/fresh_check.sh [--new-base] [--mirror URL] [--keep]
#
#   --new-base   make the base image again even if it exists
#   --mirror URL the Debian mirror for debootstrap and the image's apt sources
#                (default: the one this machine's apt uses)
#   --keep       keep the container's log and the clone's build/ output
#                under build/fresh-check/ (always kept when a step fails)
#
# Inside the container, as root (a user types sudo where the README does):
#   0. what the README asks for before its commands: `apt-get update` and
#      `apt-get install -y git make curl`, then `git clone` of this repository
#      (its committed HEAD, mounted read-only) and `cd` into the clone;
#   1. `make run`, until /health answers 200 (it installs what is missing
#      from Debian's archive and builds first);
#   2. the README's quick start against it: its first block marked
#      <!-- example: encode --> run with bash -euo pipefail, printing each
#      text its "# =>" lines name (its /v1/encode's outputs among them, which
#      only a 200 carries);
#   3. SIGTERM to attnd (the README: "Stop it with Ctrl-C or SIGTERM"), and
#      `make run` exits 0 within 60 s;
#   4. `make test`, which must exit 0.
# Each step's time is printed.  The image is debian:bookworm-slim as
# `make container-check` makes it (debootstrap's minbase, slimmed; shared in
# tools/ci/check_lib.sh) with nothing added; the container gets its own network
# namespace (its port 8080 is not the host's) with outbound access to the
# package registries, 1 GiB of /dev/shm (Chromium's; podman's default is
# 64 MiB, a real machine's is half its memory) and, when the host's node or
# npm is told to trust a CA bundle (NODE_EXTRA_CA_CERTS, or npm's cafile: a
# TLS-intercepting proxy between this machine and npm, as on the project's
# machines), that file lent read-only as NODE_EXTRA_CA_CERTS.  Nothing else
# of the host goes in.
#
# Needs root (rootful podman) and Debian's podman runc netavark iptables
# debootstrap git curl python3 (make fresh-check installs them).
# Exit status: 0 all passed, 1 a step failed, 2 it cannot run here.
set -euo pipefail

say() { printf 'fresh-check: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }
cannot() { say "cannot run: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || cannot "$here is not in a git work tree"

new_base=0 mirror="" keep=0
while [ $# -gt 0 ]; do
  case $1 in
    --new-base) new_base=1 ;;
    --mirror) [ $# -ge 2 ] || cannot "--mirror needs a URL"; mirror=$2; shift ;;
    --mirror=*) mirror=${1#--mirror=} ;;
    --keep) keep=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) cannot "unknown option $1 (--help)" ;;
  esac
  shift
done

[ "$(id -u)" = 0 ] || cannot "needs root (podman runs rootful here)"
for c in podman runc debootstrap git tar timeout; do
  command -v "$c" >/dev/null || cannot "$c is not installed (make fresh-check installs it)"
done
PY=${PYTHON:-/usr/bin/python3}
BASE=docker.io/library/debian:bookworm-slim
SUITE=bookworm
# Bounds: the whole container run, and make run until it is healthy (it
# installs the build's packages and compiles first).
LIMIT_S=${FRESH_LIMIT_S:-3000}
RUN_READY_S=900

export CONTAINERS_CONF=$here/containers.conf
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnd-fresh-check.XXXXXX")
out=$repo/build/fresh-check
name=attnd-fresh-check-$$
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  pm 60 rm --force --time 0 "$name" >/dev/null 2>&1 || true
  remove_tmp
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted (SIGINT)"; exit 130' INT
trap 'say "interrupted (SIGTERM)"; exit 143' TERM

# pm, ensure_base: tools/ci/check_lib.sh.
# shellcheck source=tools/ci/check_lib.sh
. "$here/check_lib.sh"

ensure_base "$new_base"

# ---- what runs inside ---------------------------------------------------------
# The README's quick-start block, as the reader has it.
awk '/^<!-- *example: *encode *-->/ {m = 1; next}
     m == 1 && /^```/ {m = 2; next}
     m == 2 && /^```/ {exit}
     m == 2 {print}' "$repo/README.md" >"$tmp/quickstart.sh"
[ -s "$tmp/quickstart.sh" ] || fail "README.md has no block marked <!-- example: encode -->"
grep -q 'curl' "$tmp/quickstart.sh" || fail "README.md's quick-start block calls no curl"

cat >"$tmp/inside.sh" <<'EOF'
set -euo pipefail
t0=$SECONDS
step() { printf 'fresh-check: [%4d s] %s\n' $((SECONDS - t0)) "$*"; }
bad() { step "FAILED: $*"; exit 1; }

step "0. apt-get update && apt-get install -y git make curl, then git clone and cd"
apt-get update -qq >/fresh/out/apt.log 2>&1 || { tail -20 /fresh/out/apt.log; bad "apt-get update"; }
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git make curl >>/fresh/out/apt.log 2>&1 ||
  { tail -20 /fresh/out/apt.log; bad "apt-get install git make curl"; }
git clone --quiet /src /root/attnd
cd /root/attnd
step "   $(git log -1 --format='%h %s')"

step "1. make run, until /health answers 200"
setsid make run >/fresh/out/make-run.log 2>&1 &
run_pid=$!
ready=0
for _ in $(seq "$RUN_READY_S"); do
  kill -0 "$run_pid" 2>/dev/null || break
  if [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 localhost:8080/health)" = 200 ]; then
    ready=1; break
  fi
  sleep 1
done
if [ $ready != 1 ]; then
  tail -30 /fresh/out/make-run.log
  bad "make run: /health did not answer 200 within $RUN_READY_S s"
fi
step "   /health: 200"

step "2. the README's quick start"
if ! bash -euo pipefail /fresh/quickstart.sh >/fresh/out/quickstart.out 2>&1; then
  cat /fresh/out/quickstart.out; bad "the README's quick start failed"
fi
n=0
while IFS= read -r want; do
  n=$((n + 1))
  grep -qF -- "$want" /fresh/out/quickstart.out ||
    { cat /fresh/out/quickstart.out; bad "the README's quick start did not print: $want"; }
done < <(sed -n 's/^ *# => //p' /fresh/quickstart.sh)
[ $n -gt 0 ] || bad "the README's quick start has no '# =>' line"
step "   ran; printed the $n texts its '# =>' lines name"

step "3. SIGTERM to attnd; make run exits 0"
pid=""
for p in /proc/[0-9]*; do
  [ "$(readlink "$p/exe" 2>/dev/null)" = /root/attnd/build/attnd ] && pid=${p#/proc/}
done
[ -n "$pid" ] || bad "no attnd process under make run"
kill -TERM "$pid"
for _ in $(seq 600); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$run_pid" 2>/dev/null && bad "make run still running 60 s after SIGTERM"
rc=0; wait "$run_pid" || rc=$?
[ $rc = 0 ] || { tail -20 /fresh/out/make-run.log; bad "make run exited $rc after SIGTERM"; }
step "   make run exited 0"

step "4. make test"
rc=0; make test >/fresh/out/make-test.log 2>&1 || rc=$?
grep -E '^[0-9]+%: Checks:|objects validated|docs examples:|openapi check|page test' /fresh/out/make-test.log || true
if [ $rc != 0 ]; then
  tail -40 /fresh/out/make-test.log; bad "make test exited $rc"
fi
step "   make test exited 0"
step "passed"
EOF

# ---- the container ------------------------------------------------------------
mkdir -p "$tmp/out"
args=(--name "$name" --rm --init --shm-size 1g
      -e "RUN_READY_S=$RUN_READY_S"
      -v "$repo:/src:ro" -v "$tmp/inside.sh:/fresh/inside.sh:ro"
      -v "$tmp/quickstart.sh:/fresh/quickstart.sh:ro" -v "$tmp/out:/fresh/out")
# The CA bundle the host's node is told to trust (NODE_EXTRA_CA_CERTS), or
# else npm's cafile setting: where a TLS-intercepting proxy stands between
# this machine and npm, only that bundle holds its CA.
ca=${NODE_EXTRA_CA_CERTS:-}
if [ -z "$ca" ] && command -v npm >/dev/null; then
  ca=$(npm config get cafile 2>/dev/null || true)
  case $ca in null|undefined) ca="" ;; esac
fi
if [ -n "$ca" ] && [ -r "$ca" ]; then
  args+=(-v "$ca:/run/host-ca.crt:ro" -e NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
  say "lent: the CA bundle the host's node or npm trusts ($ca), read-only, as NODE_EXTRA_CA_CERTS"
fi
say "clone of $(git -C "$repo" log -1 --format='%h (%s)'): make run, then make test, in a clean $BASE"
t0=$SECONDS
rc=0
pm "$LIMIT_S" run "${args[@]}" "$BASE" bash /fresh/inside.sh 2>&1 | grep --line-buffered -v 'CNI config' || rc=${PIPESTATUS[0]}
took=$((SECONDS - t0))
if [ "$rc" != 0 ] || [ "$keep" = 1 ]; then
  rm -rf "$out" && mkdir -p "$out" && cp -r "$tmp/out/." "$out/"
  say "the container's logs: $out/ (apt.log, make-run.log, quickstart.out, make-test.log)"
fi
[ "$rc" != 124 ] || fail "over the time limit ($LIMIT_S s)"
[ "$rc" = 0 ] || fail "a step failed in the container (exit $rc, $took s)"
say "passed in $took s"
