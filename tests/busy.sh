#!/usr/bin/env bash
# busy.sh RUNNER [SECONDS]: every Check suite (RUNNER, the test runner) with
# two busy loops beside it, as on a shared CI host (make test-busy).  The
# loops are bounded (SECONDS, default 3600) and ended when the suites end,
# however they end.  The suites must pass within their timeouts; the share
# of a timeout a test may take is not checked here (ATTND_TEST_TIME_SHARE=1),
# since the loops take half the CPU, but the slowest are printed.
set -euo pipefail
runner=$1
seconds=${2:-3600}
loops=()
end_loops() {
  [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap end_loops EXIT
for _ in 1 2; do
  timeout "$seconds" sh -c 'while :; do :; done' &
  loops+=($!)
done
echo "busy.sh: two busy loops (pids ${loops[*]}, at most $seconds s) beside $runner"
ATTND_TEST_TIME_SHARE=1 OPENBLAS_NUM_THREADS=2 "$runner"
