#!/usr/bin/env bash
# bench/parts/memory.sh - memory: one sequence of L=BENCH_MEMORY_LEN with
# attention "none": the core's peak resident memory (bench_core), and the
# daemon's after serving it over HTTP in base64 (VmHWM); then the daemon's
# after serving per-head weights of a window 64 as CSR (bench/long_memory.py).
# Sourced by bench/run.sh, or run alone: bash bench/parts/memory.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "memory: B=1 L=$MEM_LEN, attention none"
if skipped memory; then
    WHY[memory]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    # shellcheck disable=SC2086
    run_step 600 "$BB"/bench_core core --batch 1 --len "$MEM_LEN" --threads "$THREADS" --repeat 1 \
        --warmup 0 --attention none $MODEL_FLAGS || { FAILED=1; WHY[memory]="bench_core failed"; }
    mem_body=$((MEM_LEN * 768 * 4 * 4 / 3 + 1024))
    # shellcheck disable=SC2086
    start_daemon $MODEL_FLAGS --max-seq-len "$MEM_LEN" --max-batch-tokens "$MEM_LEN" \
        --max-body-bytes $((mem_body * 2)) --connection-timeout 600
    if [ "$ready" != 1 ]; then
        WHY[memory]="attnd did not start (log: $BB/attnd.log)"
        FAILED=1
    else
        idle=$(vm_kib "$DAEMON_PID" VmRSS)
        run_step 600 "$BB"/http_bench latency --port "$PORT" --format b64 --batch 1 \
            --len "$MEM_LEN" --attention none --seconds 1 --max-requests 1 --warmup 0 \
            --name http_mem || { FAILED=1; WHY[memory]="http_bench failed"; }
        peak=$(vm_kib "$DAEMON_PID" VmHWM)
        if [ -n "$peak" ]; then
            R[http_mem_peak_rss_mib]=$(calc "$peak / 1024")
            echo "-> attnd resident: $(fmt "$(calc "$idle / 1024")" 0) MiB idle, peak $(fmt "${R[http_mem_peak_rss_mib]}" 0) MiB (VmHWM) serving one B=1 L=$MEM_LEN base64 request"
        fi
        # the same daemon, per-head weights of a window 64 as CSR
        run_step 600 "$PYTHON" bench/long_memory.py --port "$PORT" --pid "$DAEMON_PID" \
            --len "$MEM_LEN" --window 64 ||
            { FAILED=1; WHY[long_memory]="bench/long_memory.py failed"; }
    fi
    stop_daemon
fi

bench_part_done
