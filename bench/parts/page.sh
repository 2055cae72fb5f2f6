#!/usr/bin/env bash
# bench/parts/page.sh - the page's model view: the time from the response to
# a 12-layer x 12-head stack's 156 thumbnails drawn, at L=128, in headless
# Chromium (tests/page/model_view.js, the page test's own measurement).
# Sourced by bench/run.sh, or run alone: bash bench/parts/page.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "page: the model view of 12 layers x 12 heads at L=128, from the response to drawn (headless Chromium)"
if skipped page; then
    WHY[page]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
elif [ ! -f node_modules/playwright-core/package.json ] || [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    WHY[page]="needs node_modules/playwright-core (make deps-node) and ${CHROMIUM:-/usr/bin/chromium}"
    echo "skipped: ${WHY[page]}"
else
    run_step 300 node tests/page/model_view.js build/attnd node_modules "${BENCH_PAGE_ROUNDS:-5}" ||
        { FAILED=1; WHY[page]="tests/page/model_view.js failed"; }
fi

bench_part_done
