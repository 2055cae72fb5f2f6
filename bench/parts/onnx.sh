#!/usr/bin/env bash
# bench/parts/onnx.sh - ONNX Runtime: the block exported by bench/torch_bench.py
# export, timed by bench/ort_bench.js through onnxruntime-node (npm, into
# build/bench), intra_op threads BENCH_THREADS; its ratio to the core's best
# when the core part ran.  Optional: skipped with the reason when PyTorch,
# node or npm cannot run here.  Sourced by bench/run.sh, or run alone:
# bash bench/parts/onnx.sh.
# shellcheck disable=SC2034 # R and WHY are read by bench/summary.sh
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    # shellcheck source=bench/lib.sh
    . "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
    bench_alone
fi

section "ONNX Runtime (onnxruntime-node), intra_op threads $THREADS"
onnx_skip() { WHY[onnx]=$1; echo "skipped: $1"; }
if skipped onnx; then
    onnx_skip "BENCH_SKIP"
elif [ -n "${WHY[torch]:-}" ]; then
    onnx_skip "the export needs PyTorch, which did not run (${WHY[torch]})"
elif ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    onnx_skip "node and npm are not installed"
else
    ok=1
    if [ ! -f "$BB/node_modules/onnxruntime-node/package.json" ]; then
        # The package bundles its CPU binaries; its install script only fetches
        # CUDA ones (from api.nuget.org), which ONNXRUNTIME_NODE_INSTALL=skip
        # turns off.  --prefix: into build/bench/node_modules, not the
        # checkout's (npm would take the nearest package.json's directory).
        # npm's own chatter goes to build/bench/npm.log.
        printf '$ ONNXRUNTIME_NODE_INSTALL=skip npm install --prefix %s --no-save --no-audit --no-fund --no-package-lock onnxruntime-node@%s\n' "$BB" "$ORT_VERSION"
        if ! ONNXRUNTIME_NODE_INSTALL=skip timeout "$NPM_TIMEOUT" npm install --prefix "$BB" \
            --no-save --no-audit --no-fund --no-package-lock "onnxruntime-node@$ORT_VERSION" \
            >"$BB/npm.log" 2>&1; then
            ok=0
            onnx_skip "npm install onnxruntime-node@$ORT_VERSION failed: $(grep -m1 -E 'npm (error|ERR!) (code|[A-Z])' "$BB/npm.log" || tail -n 1 "$BB/npm.log") (full log: $BB/npm.log)"
        fi
    else
        echo "(onnxruntime-node already installed in $BB/node_modules)"
    fi
    if [ "$ok" = 1 ]; then
        mkdir -p "$BB/onnx_check"
        run_step 300 "$PYTHON" bench/torch_bench.py export "$BB/block.onnx" \
            --check-dir "$BB/onnx_check"
        rc=$?
        if [ "$rc" != 0 ]; then
            ok=0
            onnx_skip "$(step_reason)"
            [ "$rc" = 3 ] || FAILED=1
        fi
    fi
    if [ "$ok" = 1 ]; then
        run_step 300 env NODE_PATH="$BB/node_modules" node bench/ort_bench.js "$BB/block.onnx" \
            --threads "$THREADS" --shapes "${SHAPES// /,}" --repeat "$REPEAT" --warmup "$WARMUP" \
            --check-dir "$BB/onnx_check"
        rc=$?
        if [ "$rc" != 0 ]; then
            onnx_skip "$(step_reason)"
            [ "$rc" = 3 ] || FAILED=1
        fi
        for s in $SHAPES; do
            v=${R[ort_${s}_best_ms]:-}
            if [ -z "$v" ] || [ -z "${R[core_${s}_best_ms]:-}" ]; then
                continue
            fi
            R[ort_ratio_${s}]=$(calc "$v / ${R[core_${s}_best_ms]}")
            echo "-> B=${s%x*} L=${s#*x}: ONNX Runtime / attnd = $(fmt "${R[ort_ratio_${s}]}" 2) (${v} ms vs ${R[core_${s}_best_ms]} ms, best of each)"
        done
    fi
fi

bench_part_done
