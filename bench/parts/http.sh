#!/usr/bin/env bash
# bench/parts/http.sh - HTTP: build/bench/wake_latency (a thread woken on an
# idle CPU, and on one attnd's spinners keep busy), the core again at B=1
# L=128 (the HTTP ratios' denominator), then build/attnd on 127.0.0.1 +
# build/bench/http_bench: latency p50/p99 (base64, JSON) at B=1, and at B=8
# L=128 with attention heads and none (against the daemon's compute median,
# with its page faults per request), throughput (BENCH_CLIENTS clients);
# then the transport alone (bench/transport_floor.py), for reference.
# Sourced by bench/run.sh, or run alone: bash bench/parts/http.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "HTTP: build/attnd on 127.0.0.1, keep-alive clients"
http_fail() { WHY[http]=$1; echo "bench: $1"; FAILED=1; }
if skipped http; then
    WHY[http]="BENCH_SKIP"
    echo "skipped (BENCH_SKIP)"
else
    # What compute.spin_us is for: a wake-up on a CPU left idle, and on one
    # the spinners keep busy.
    run_step 60 "$BB"/wake_latency --gap-us 1000 --rounds 300 --window-us 2000 ||
        echo "(the wake-up latency could not be measured)"
    # The core's own time for the request timed below, measured just before
    # it: the machine's speed changes from one minute to the next (the core
    # part).  The core part's median is the fallback.
    # shellcheck disable=SC2086
    run_step 180 "$BB"/bench_core core --batch 1 --len 128 --threads "$THREADS" --repeat "$REPEAT" \
        --warmup "$WARMUP" --name core_http $MODEL_FLAGS ||
        echo "(the core could not be timed again; the core part's median is used)"
    R[http_core_median_ms]=${R[core_http_median_ms]:-${R[core_1x128_median_ms]:-}}
    # shellcheck disable=SC2086
    start_daemon $MODEL_FLAGS
    if [ "$ready" != 1 ]; then
        http_fail "attnd did not become ready within 30 s (log: $BB/attnd.log)"
    else
        echo "(attnd pid $DAEMON_PID, port $PORT)"
        core_med=${R[http_core_median_ms]:-}
        for fmt_ in b64 json; do
            run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench latency --port "$PORT" --format "$fmt_" \
                --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" \
                --warmup 3 --name "http_$fmt_" || { http_fail "http_bench latency $fmt_ failed"; continue; }
            if [ "$fmt_" = b64 ]; then
                # base64: against the daemon's own compute median
                R[http_b64_ratio]=$(calc "${R[http_b64_p50_ms]} / ${R[http_b64_compute_ms]}")
                echo "-> p50 / the daemon's compute median (B=1 L=128) = $(fmt "${R[http_b64_ratio]}" 2)"
            elif [ -n "$core_med" ]; then
                R[http_${fmt_}_ratio]=$(calc "${R[http_${fmt_}_p50_ms]} / $core_med")
                echo "-> p50 / core median for the same request (B=1 L=128, $core_med ms) = $(fmt "${R[http_${fmt_}_ratio]}" 2)"
            fi
        done
        # A batch's large responses, streamed from reused buffers:
        # wall p50 against the daemon's own compute median for the same
        # requests (X-Compute-Ms), and its minor page faults per request.
        for att_ in heads none; do
            for fmt_ in b64 json; do
                k=http8_${att_}_${fmt_}
                run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench latency --port "$PORT" \
                    --format "$fmt_" --batch 8 --len 128 --attention "$att_" --pid "$DAEMON_PID" \
                    --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 --name "$k" ||
                    { http_fail "http_bench latency B=8 $att_ $fmt_ failed"; continue; }
                R[${k}_ratio]=$(calc "${R[${k}_p50_ms]} / ${R[${k}_compute_ms]}")
                echo "-> p50 / the daemon's compute median = $(fmt "${R[${k}_ratio]}" 2)"
            done
        done
        run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench throughput --port "$PORT" \
            --clients "$CLIENTS" --batch 1 --len 32 --seconds "$HTTP_SECONDS" --name http_small ||
            http_fail "http_bench throughput ($CLIENTS clients) failed"
        run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench throughput --port "$PORT" \
            --clients 1 --batch 32 --len 32 --seconds "$HTTP_SECONDS" --name http_big ||
            http_fail "http_bench throughput (B=32) failed"
        if [ -n "${R[http_small_tokens_per_s]:-}" ] && [ -n "${R[http_big_tokens_per_s]:-}" ]; then
            R[http_tput_ratio]=$(calc "${R[http_small_tokens_per_s]} / ${R[http_big_tokens_per_s]}")
            echo "-> $CLIENTS clients x B=1 L=32 / one client x B=32 L=32 (tokens/s) = $(fmt "$(calc "100 * ${R[http_tput_ratio]}")" 1)%"
        fi
    fi
    stop_daemon
    echo "(attnd stopped)"
    # The transport alone, for reference: a server that answers the same
    # request with a body of the same size and does nothing else.
    start_floor
    if [ -n "$FLOOR_PORT" ]; then
        run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench latency --port "$FLOOR_PORT" --format b64 \
            --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 \
            --name http_floor || echo "(the transport floor could not be measured)"
    else
        echo "(the transport floor server did not start: $(tail -n 1 "$BB/floor.log"))"
    fi
    kill "$FLOOR_PID" 2>/dev/null
    wait "$FLOOR_PID" 2>/dev/null
    # The same with a CPU kept busy between request and answer for as long
    # as the daemon's forward took: the floor under attnd's p50 - compute,
    # the bytes moved around a forward as attnd moves them.
    busy=${R[http_b64_compute_ms]:-}
    if [ -n "$busy" ] && holds "$busy > 0"; then
        start_floor --busy-ms "$busy"
        if [ -n "$FLOOR_PORT" ] &&
            run_step $((HTTP_SECONDS + 60)) "$BB"/http_bench latency --port "$FLOOR_PORT" --format b64 \
                --batch 1 --len 128 --seconds "$HTTP_SECONDS" --max-requests "$HTTP_MAX" --warmup 3 \
                --name http_floor_busy; then
            R[http_floor_busy_ms]=$(calc "${R[http_floor_busy_p50_ms]} - $busy")
            R[http_floor_ratio]=$(calc "${R[http_floor_busy_p50_ms]} / $busy")
            echo "-> the transport around a forward: p50 - busy = $(fmt "${R[http_floor_busy_ms]}" 3) ms; a server answering after a $busy ms forward: p50 / compute >= $(fmt "${R[http_floor_ratio]}" 2)"
        else
            echo "(the transport floor around a forward could not be measured)"
        fi
        kill "$FLOOR_PID" 2>/dev/null
        wait "$FLOOR_PID" 2>/dev/null
    fi
fi

bench_part_done
