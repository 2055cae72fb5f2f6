# shellcheck shell=bash
# check_lib.sh - the helpers tools/container_check.sh and
# tests/deploy/compose_check.sh share: podman bounded in time, HTTP requests
# and what their answers hold, request bodies, health checks.  Sourced, not
# run; the caller defines say and fail, $tmp (its temporary directory) and
# $PY (Debian's python3).

# pm SECONDS ARGS...: podman, bounded in time (a hung engine fails the check
# instead of hanging CI), with
#   --runtime runc            Debian's runc as the OCI runtime: crun,
#                             podman's preference when installed, was
#                             measured failing on these hosts' cgroups (v1),
#   --cgroup-manager cgroupfs cgroups written directly: no systemd here to ask.
# (timeout --foreground: Ctrl-C still reaches podman.)
pm() {
  local t=$1; shift
  timeout --foreground --kill-after=10 "$t" podman --runtime runc --cgroup-manager cgroupfs "$@"
}

# http METHOD URL [BODY_FILE [REQUEST_ID]]: the status code; the body lands
# in $tmp/body, curl's complaints in $tmp/curl.err.
http() {
  local args=(-sS -o "$tmp/body" -w '%{http_code}' --max-time 30 -X "$1" "$2")
  [ $# -lt 3 ] || args+=(-H 'Content-Type: application/json' --data-binary "@$3")
  [ $# -lt 4 ] || args+=(-H "X-Request-Id: $4")
  curl "${args[@]}" 2>>"$tmp/curl.err" || echo "000"
}

# j EXPR: EXPR (Python) evaluated on the JSON in $tmp/body as j; prints it.
j() {
  "$PY" -c 'import json, sys; j = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
    "$tmp/body" "$1" 2>/dev/null || echo "(not JSON, or no such field)"
}

# expect WHAT GOT WANT: fails the check unless GOT is WANT.
expect() {
  [ "$2" = "$3" ] || fail "$1: got '$2', expected '$3' (body: $(head -c 300 "$tmp/body" 2>/dev/null))"
}

free_port() {
  "$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# embeddings B L D: a JSON array [B][L][D] of small numbers.
embeddings() {
  "$PY" -c 'import json, sys; b, l, d = map(int, sys.argv[1:])
print(json.dumps([[[((i * 7 + k * 3) % 11 - 5) / 10 for k in range(d)] for i in range(l)] for _ in range(b)]))' "$@"
}

# wait_healthy CTR SECONDS: runs CTR's health check (`podman healthcheck
# run`: exit 0 healthy, 1 unhealthy) until it passes.  podman runs it by
# hand here: its timer for the --interval needs systemd.
wait_healthy() {
  local c=$1 deadline=$((SECONDS + $2)) out
  until out=$(pm 30 healthcheck run "$c" 2>&1); do
    [ "$(pm 30 inspect --format '{{.State.Running}}' "$c" 2>/dev/null)" = true ] ||
      fail "$c exited before it was healthy"
    [ $SECONDS -lt $deadline ] || fail "$c: its health check still fails after $2 s: $out"
    sleep 1
  done
  expect "$c: health status" "$(pm 30 inspect --format '{{.State.Healthcheck.Status}}' "$c")" healthy
}

# wait_log CTR TEXT SECONDS: waits until CTR's log holds TEXT.
wait_log() {
  local deadline=$((SECONDS + $3))
  until pm 30 logs "$1" 2>&1 | grep -qF -- "$2"; do
    [ $SECONDS -lt $deadline ] || fail "$1: no '$2' in its log after $3 s"
    sleep 0.2
  done
}
