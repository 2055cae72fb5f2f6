#!/usr/bin/env bash
# valgrind.sh RUNNER: every Check suite of tests/suites.h under valgrind
# memcheck with VALGRIND_OPTS (make valgrind sets them), each suite its own
# run, without a fork (so that a leak is seen), JOBS (default: the CPUs) at
# a time.  valgrind runs a process's threads one at a time, so one
# run of every suite leaves all CPUs but one idle; a suite per run fills
# them.  Suites start heaviest first (HEAVY below, from the run times make
# valgrind prints), so that the last to finish is a short one.
#
# Each run's output goes to a log of its own, printed when it fails; the
# summary line of each is printed as it ends.  Exits non-zero when any
# suite fails, leaks, or has a memory error (valgrind's --error-exitcode).
set -euo pipefail
runner=$1
here=$(cd "$(dirname "$0")" && pwd)
jobs=${JOBS:-$(nproc)}
VALGRIND_OPTS=${VALGRIND_OPTS:---quiet --leak-check=full --error-exitcode=1}

# The suites, by name, in tests/suites.h's order.
mapfile -t suites < <(sed -n 's/^ *X(\([a-z0-9_]*\), [A-Z]*).*/\1/p' "$here/suites.h")
[ ${#suites[@]} -gt 0 ] || { echo "valgrind.sh: no suites read from $here/suites.h" >&2; exit 1; }
# The slowest under valgrind first; the rest in their order.
HEAVY=(naive v1_fixtures tokenizer dtype modernbert blockmask torch jsonnum embed http)
order=()
for s in "${HEAVY[@]}"; do
  [[ " ${suites[*]} " == *" $s "* ]] && order+=("$s")
done
for s in "${suites[@]}"; do
  [[ " ${HEAVY[*]} " == *" $s "* ]] || order+=("$s")
done

logs=$(mktemp -d /tmp/attnd-valgrind-XXXXXX)
trap 'rm -rf "$logs"' EXIT
export runner logs
export CK_FORK=no OPENBLAS_NUM_THREADS=2 OPENBLAS_CORETYPE=Haswell
export VALGRIND_OPTS
run_one() {
  local s=$1 t=$SECONDS rc=0
  # shellcheck disable=SC2086
  CK_RUN_SUITE=$s valgrind $VALGRIND_OPTS "$runner" >"$logs/$s.log" 2>&1 || rc=$?
  local summary slowest
  summary=$(grep -E '^[0-9]+%: Checks' "$logs/$s.log" | tail -1 || true)
  # the first of the runner's slowest tests against their timeouts
  slowest=$(grep -A1 '^test times:' "$logs/$s.log" | sed -n '2s/^ *//p' || true)
  printf '%-14s %4d s  %s; slowest: %s%s\n' "$s" $((SECONDS - t)) "${summary:-no summary}" \
    "${slowest:-none}" "$([ $rc -eq 0 ] || echo "  FAILED (exit $rc)")"
  if [ $rc -ne 0 ]; then
    sed 's/^/    /' "$logs/$s.log"
    return 1
  fi
}
export -f run_one
echo "valgrind.sh: ${#order[@]} suites under valgrind, $jobs at a time"
t0=$SECONDS
rc=0
printf '%s\n' "${order[@]}" | xargs -P "$jobs" -I{} bash -c 'run_one "$@"' _ {} || rc=$?
echo "valgrind.sh: $((SECONDS - t0)) s in all"
exit $rc
