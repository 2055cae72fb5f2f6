#!/usr/bin/env bash
# bench/parts/core.sh - the core: build/bench/bench_core core, enc_forward with
# per-head attention weights, best and median ms, GFLOP/s, at B=1 L=128,
# B=8 L=128 and B=1 L=512 (core_round, bench/lib.sh: the PyTorch part times
# it again before each later round, each figure the best of the rounds).
# Sourced by bench/run.sh, or run alone: bash bench/parts/core.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "core: enc_forward with ENC_ATTN_HEADS, enc_set_threads($THREADS)"
core_round

bench_part_done
