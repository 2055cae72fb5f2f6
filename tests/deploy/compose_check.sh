#!/usr/bin/env bash
# compose_check.sh - deploy/compose.yaml run for real: three attnd replicas
# behind nginx under podman-compose (Debian 12's 1.0.3), requests through
# nginx's published port, one replica drained while requests keep succeeding.
#
#   bash tests/deploy/compose_check.sh [--build-attnd]
#
#   --build-attnd  build the image attnd from a fresh clone of HEAD even when
#                  it exists (by default the one `make container-check` built
#                  is reused; it is built here only when missing)
#
# Steps:
#   1. the images: debian:bookworm-slim (made by make container-check), attnd
#      (reused, or built from a fresh clone of HEAD), attnd-nginx built from
#      deploy/nginx/ as tools/ci/container_check.sh builds attnd's;
#   2. podman-compose -p attnd-compose-check up -d, nginx published on a free
#      127.0.0.1 port (ATTND_COMPOSE_PORT); every container running;
#   3. the replicas' health checks (compose's, run by `podman healthcheck
#      run`) healthy, then nginx's, then GET /health through nginx;
#   4. each container as compose.yaml asks: non-root, no capabilities,
#      no-new-privileges, read-only root filesystem;
#   5. nginx's upstream: the service names, resolved by podman's DNS
#      (aardvark-dns) to the replicas' addresses;
#   6. /v1/encode and /v2/models/{name}/infer through nginx, the same body
#      several times each: all 200, every answer the same, and every replica
#      served some (each replica's access log holds this run's request ids;
#      nginx's access log names the same replicas);
#   7. `podman stop` of one replica (ATTND_DRAIN_SECONDS=5) under load through
#      nginx: it drains and exits 0, and every request succeeds, during the
#      drain and after it (nginx retries what the stopped replica refused);
#   8. always, also after a failure or an interrupt: podman-compose down, and
#      the project's network (podman-compose 1.0.3 leaves it) removed.
#
# The podman settings this host needs go in a containers.conf made here
# (CONTAINERS_CONF): tools/ci/containers.conf's [containers] lines plus [engine]
# runtime = "runc" and cgroup_manager = "cgroupfs", since podman-compose
# passes --podman-args after the subcommand and `--cgroup-manager` is a
# global flag; DISABLE_HC_SYSTEMD=true as tools/ci/container_check.sh says.
#
# Needs root (rootful podman) and Debian's podman-compose aardvark-dns podman
# buildah runc netavark iptables git curl python3.
# Exit status: 0 passed, 1 a check failed, 2 it cannot run here.
set -euo pipefail

say() { printf 'compose-check: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }
cannot() { say "cannot run: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || cannot "$here is not in a git work tree"

build_attnd=0
while [ $# -gt 0 ]; do
  case $1 in
    --build-attnd) build_attnd=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) cannot "unknown option $1 (--help)" ;;
  esac
  shift
done

[ "$(id -u)" = 0 ] || cannot "needs root (podman runs rootful here)"
for c in podman podman-compose runc git curl timeout; do
  command -v "$c" >/dev/null || cannot "$c is not installed (apt-get install podman-compose aardvark-dns podman runc git curl)"
done
aardvark=""
for p in /usr/lib/podman/aardvark-dns /usr/libexec/podman/aardvark-dns; do [ -x "$p" ] && aardvark=$p; done
[ -n "$aardvark" ] || cannot "aardvark-dns is not installed: the replicas' names would not resolve (apt-get install aardvark-dns)"
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || cannot "$PY is not installed"

PROJECT=attnd-compose-check
COMPOSE=$repo/deploy/compose.yaml
NETWORK=${PROJECT}_default            # podman-compose 1.0.3's name for it
BASE=docker.io/library/debian:bookworm-slim
REPLICAS=(attnd-1 attnd-2 attnd-3)    # compose.yaml's attnd services
DRAINED=attnd-2                       # the one podman stop drains in step 7
[ -f "$COMPOSE" ] || cannot "no $COMPOSE"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnd-compose-check.XXXXXX")

# podman's settings for this host, for podman-compose's podman commands and ours.
{ cat "$repo/tools/ci/containers.conf"
  printf '\n[engine]\n# no crun (it fails on these hosts'"'"' cgroups v1), no systemd to ask\n'
  printf 'runtime = "runc"\ncgroup_manager = "cgroupfs"\n'; } >"$tmp/containers.conf"
export CONTAINERS_CONF=$tmp/containers.conf
export DISABLE_HC_SYSTEMD=true

# pc SECONDS ARGS...: podman-compose on this project, bounded in time, its
# chatter (every podman command it runs) in $tmp/compose.log.
pc() {
  local t=$1; shift
  printf '\n$ podman-compose -f %s -p %s %s\n' "$COMPOSE" "$PROJECT" "$*" >>"$tmp/compose.log"
  timeout --foreground --kill-after=10 "$t" podman-compose -f "$COMPOSE" -p "$PROJECT" "$@" >>"$tmp/compose.log" 2>&1
}

# The project's containers (any state), by compose's labels.
project_containers() {
  pm 30 ps -a --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}}' 2>/dev/null || true
}

loaders=()   # background load generators (step 7)
up=0
# Always: stop the load, podman-compose down (after a failure, the last lines
# of each container's log first), anything of the project still there removed,
# its network removed, the temporary directory removed.  The images stay.
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  : >"$tmp/stop"
  for p in "${loaders[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  if [ "$up" = 1 ]; then
    if [ "$rc" != 0 ]; then
      for c in $(project_containers); do
        say "the last lines of $c's log ($(pm 30 inspect --format '{{.State.Status}}' "$c" 2>/dev/null)):"
        pm 30 logs --tail 15 "$c" 2>&1 | sed 's/^/    /'
      done
    fi
    local t0=$SECONDS
    pc 180 down -t 15 || say "podman-compose down failed or timed out (its output: $(tail -n 3 "$tmp/compose.log" | tr '\n' ' '))"
    local left
    left=$(project_containers)
    if [ -n "$left" ]; then
      say "left after podman-compose down: $(paste -sd' ' - <<<"$left"); removing them"
      for c in $left; do pm 60 rm --force --time 0 "$c" >/dev/null 2>&1 || say "could not remove $c (podman rm -f $c)"; done
    fi
    if pm 30 network exists "$NETWORK" 2>/dev/null; then
      pm 60 network rm "$NETWORK" >/dev/null 2>&1 || say "could not remove the network $NETWORK (podman network rm $NETWORK)"
    fi
    say "podman-compose down: the containers of project $PROJECT removed in $((SECONDS - t0)) s, and its network $NETWORK; kept the images"
  fi
  if [ "$rc" != 0 ] && [ -s "$tmp/compose.log" ]; then
    cp "$tmp/compose.log" "${TMPDIR:-/tmp}/attnd-compose-check.compose.log" 2>/dev/null &&
      say "podman-compose's output (every podman command it ran): ${TMPDIR:-/tmp}/attnd-compose-check.compose.log"
  fi
  rm -rf --one-file-system "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted (SIGINT)"; exit 130' INT
trap 'say "interrupted (SIGTERM)"; exit 143' TERM

# ---- helpers -------------------------------------------------------------------

# pm, http, j, expect, free_port, embeddings, wait_healthy:
# tools/ci/check_lib.sh, shared with tools/ci/container_check.sh.
# shellcheck source=tools/ci/check_lib.sh
. "$repo/tools/ci/check_lib.sh"

# ctr SERVICE: the project's container of that compose service.
ctr() {
  local c
  c=$(pm 30 ps -a --filter "label=com.docker.compose.project=$PROJECT" \
        --filter "label=com.docker.compose.service=$1" --format '{{.Names}}' | head -n 1) || true
  [ -n "$c" ] || fail "no container for the service $1"
  echo "$c"
}

# ---- 1. the images -------------------------------------------------------------
pm 30 image exists "$BASE" ||
  cannot "no image $BASE: make container-check makes it (debootstrap; there is no registry here)"
build_flags=(--isolation=chroot --network host --pull=never --format docker)   # tools/ci/container_check.sh says why

if [ $build_attnd = 1 ] || ! pm 30 image exists attnd; then
  git clone --quiet "$repo" "$tmp/src" || fail "git clone $repo failed"
  say "building attnd from a fresh clone of HEAD ($(git -C "$tmp/src" log -1 --format=%h)): podman build ${build_flags[*]}"
  t0=$SECONDS
  pm 2400 build "${build_flags[@]}" -t attnd -f "$tmp/src/Dockerfile" "$tmp/src" >"$tmp/build.log" 2>&1 ||
    { tail -n 30 "$tmp/build.log" >&2; fail "podman build of attnd failed (the last lines above)"; }
  say "built attnd in $((SECONDS - t0)) s"
  rm -rf "$tmp/src"
else
  created=$(pm 30 image inspect --format '{{.Created.Unix}}' attnd)
  say "attnd: the image there is reused ($(pm 30 image inspect --format '{{.ID}}' attnd | cut -c1-12), built $(date -d "@$created" '+%F %T'); --build-attnd builds it again)"
  [ "$created" -ge "$(git -C "$repo" log -1 --format=%ct)" ] ||
    say "  note: it is older than HEAD's commit; make container-check (or --build-attnd) rebuilds it"
fi
[ -n "$(pm 30 image inspect --format '{{if .HealthCheck}}{{index .HealthCheck.Test 0}}{{end}}' attnd)" ] ||
  say "  note: the image attnd has no HEALTHCHECK (built without --format docker); compose.yaml's own health check is used anyway"

say "building attnd-nginx from deploy/nginx/ (the work tree): podman build ${build_flags[*]}"
t0=$SECONDS
pm 1200 build "${build_flags[@]}" -t attnd-nginx -f "$repo/deploy/nginx/Dockerfile" "$repo/deploy/nginx" >"$tmp/build-nginx.log" 2>&1 ||
  { tail -n 30 "$tmp/build-nginx.log" >&2; fail "podman build of attnd-nginx failed (the last lines above)"; }
say "built attnd-nginx in $((SECONDS - t0)) s ($(grep -c -- '--> Using cache' "$tmp/build-nginx.log" || true) steps from the layer cache), $(pm 30 run --rm --network none --entrypoint nginx attnd-nginx -v 2>&1 | sed 's/^nginx version: //')"

# ---- 2. up -----------------------------------------------------------------------
if [ -n "$(project_containers)" ]; then
  say "containers of project $PROJECT are left from an earlier run: podman-compose down first"
  up=1
  pc 180 down -t 2 || true
  for c in $(project_containers); do pm 60 rm --force --time 0 "$c" >/dev/null 2>&1 || true; done
fi

port=$(free_port)
export ATTND_COMPOSE_PORT=$port
say "podman-compose -f deploy/compose.yaml -p $PROJECT up -d --no-build (nginx on 127.0.0.1:$port)"
up=1
t0=$SECONDS
pc 300 up -d --no-build || { tail -n 20 "$tmp/compose.log" >&2; fail "podman-compose up failed (its last lines above)"; }
# podman-compose 1.0.3 exits 0 even when a container did not start: look.
for s in "${REPLICAS[@]}" nginx; do
  c=$(ctr "$s")
  state=$(pm 30 inspect --format '{{.State.Status}}' "$c")
  [ "$state" = running ] || { grep -B2 -A3 -- "--name=$c " "$tmp/compose.log" | tail -n 8 >&2; fail "$c is $state, not running (podman-compose's lines for it above)"; }
done
say "up in $((SECONDS - t0)) s, running: $(pm 30 ps --filter "label=com.docker.compose.project=$PROJECT" --format '{{.Names}}' | paste -sd' ' -)"

declare -A C IP
for s in "${REPLICAS[@]}" nginx; do C[$s]=$(ctr "$s"); done

# ---- 3. health -------------------------------------------------------------------
hc=$(pm 30 inspect --format '{{join .Config.Healthcheck.Test " "}}' "${C[attnd-1]}")
case $hc in *"/dev/tcp/127.0.0.1/8080"*"/health"*) ;; *) fail "${C[attnd-1]}: not compose.yaml's health check: $hc" ;; esac
t0=$SECONDS
for s in "${REPLICAS[@]}"; do wait_healthy "${C[$s]}" 90; done
say "the replicas' health checks (compose.yaml's GET /health): ${REPLICAS[*]} healthy after $((SECONDS - t0)) s"
wait_healthy "${C[nginx]}" 30
base=http://127.0.0.1:$port
deadline=$((SECONDS + 30))
until [ "$(http GET "$base/health")" = 200 ]; do
  [ $SECONDS -lt $deadline ] || fail "GET /health through nginx: not 200 after 30 s (last: $(head -c 200 "$tmp/body" 2>/dev/null))"
  sleep 0.5
done
say "nginx's health check healthy; GET /health through nginx (127.0.0.1:$port) -> 200 $(head -c 100 "$tmp/body")"

# ---- 4. each container as compose.yaml asks ----------------------------------------
# PID 1 is the service itself (attnd; nginx's master, exec'd by the entrypoint).
for s in "${REPLICAS[@]}" nginx; do
  c=${C[$s]}
  # shellcheck disable=SC2016
  out=$(pm 30 exec "$c" sh -c 'id -u; grep -E "^(CapEff|NoNewPrivs):" /proc/1/status; awk "\$2 == \"/\" {print \"rootfs\", \$4}" /proc/mounts') ||
    fail "podman exec $c failed"
  uid=$(head -n 1 <<<"$out")
  capeff=$(awk '$1 == "CapEff:" {print $2}' <<<"$out")
  nnp=$(awk '$1 == "NoNewPrivs:" {print $2}' <<<"$out")
  rootfs=$(awk '$1 == "rootfs" {split($2, o, ","); print o[1]}' <<<"$out" | tail -n 1)
  [ "$uid" != 0 ] || fail "$c runs as root"
  expect "$c: capabilities of PID 1 (CapEff)" "$capeff" 0000000000000000
  expect "$c: PID 1's NoNewPrivs" "$nnp" 1
  expect "$c: the root filesystem's mount" "$rootfs" ro
  say "$s: uid $uid, no capabilities (CapEff $capeff), NoNewPrivs 1, root filesystem mounted ro ($c)"
done
expect "${C[attnd-1]}: ATTND_DRAIN_SECONDS" "$(pm 30 exec "${C[attnd-1]}" printenv ATTND_DRAIN_SECONDS)" 5

# ---- 5. names: podman's DNS -------------------------------------------------------
pm 30 logs "${C[nginx]}" >"$tmp/nginx.log" 2>&1
rendered=$(awk '/^attnd-nginx: upstream attnd/ {on = 1; next} on && /^    server / {sub(/^ +/, ""); print; next} on {exit}' "$tmp/nginx.log")
[ "$(wc -l <<<"$rendered")" = ${#REPLICAS[@]} ] || fail "nginx's entrypoint did not write ${#REPLICAS[@]} server lines: $(head -c 500 "$tmp/nginx.log")"
say "nginx's upstream attnd (deploy/nginx/attnd.conf with its server lines for compose):"
awk '{print "    " $0}' <<<"$rendered"
for s in "${REPLICAS[@]}"; do
  IP[$s]=$(pm 30 inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "${C[$s]}")
  seen=$(pm 30 exec "${C[nginx]}" getent hosts "$s" | awk '{print $1}' | head -n 1) || true
  expect "$s resolved in the nginx container" "$seen" "${IP[$s]}"
done
say "podman's DNS ($(basename "$aardvark") on network $NETWORK): $(for s in "${REPLICAS[@]}"; do printf '%s -> %s  ' "$s" "${IP[$s]}"; done)"

# replica_of ADDR: the service whose address ADDR (ip:port) is.
replica_of() {
  local s
  for s in "${REPLICAS[@]}"; do [ "${1%:*}" = "${IP[$s]}" ] && { echo "$s"; return; }; done
  echo "?$1"
}

# served PREFIX: "service count" for each replica: how many request ids
# starting with PREFIX its access log holds (attnd logs "METHOD path status
# bytes time id" on stderr).
served() {
  local s
  for s in "${REPLICAS[@]}"; do
    printf '%s %s\n' "$s" "$(pm 30 logs "${C[$s]}" 2>&1 | grep -c -- " $1" || true)"
  done
}

# nginx_upstreams PREFIX: for each of nginx's access-log lines whose id starts
# with PREFIX: "status upstream[, upstream...]", replicas by service name.
nginx_upstreams() {
  # shellcheck disable=SC2046  # one NAME=IP argument per replica
  pm 30 logs "${C[nginx]}" 2>/dev/null | "$PY" -c '
import re, sys
prefix, names = sys.argv[1], dict(a.split("=") for a in sys.argv[2:])
for line in sys.stdin:
    m = re.search(r"\" (\d{3}) .* upstream=(.*) ustatus=(.*) urt=.* id=(\S+)$", line)
    if m and m.group(4).startswith(prefix):
        ups = [names.get(u.strip().rsplit(":", 1)[0], "?" + u.strip()) for u in m.group(2).split(", ")]
        print(m.group(1), ",".join(ups), m.group(3).replace(" ", ""))
' "$1" $(for s in "${REPLICAS[@]}"; do printf '%s=%s ' "${IP[$s]}" "$s"; done)
}

# ---- 6. requests through nginx --------------------------------------------------------
expect "GET /v1/model through nginx" "$(http GET "$base/v1/model")" 200
d=$(j 'j["hyperparameters"]["d_model"]') h=$(j 'j["hyperparameters"]["n_heads"]') model=$(j 'j["name"]')
say "GET /v1/model through nginx -> 200: model $model, d_model $d, $h heads"

printf '{"embeddings": %s}' "$(embeddings 1 3 "$d")" >"$tmp/v1.json"
printf '{"id": "compose-check", "inputs": [{"name": "embeddings", "datatype": "FP32", "shape": [1, 3, %s], "data": %s}]}' \
  "$d" "$(embeddings 1 3 "$d")" >"$tmp/v2.json"

N=9
run_id=cc$$
for route in v1 v2; do
  if [ $route = v1 ]; then url=$base/v1/encode body=$tmp/v1.json key='j["outputs"]'
  else url=$base/v2/models/$model/infer body=$tmp/v2.json key='[(o["name"], o["shape"], o["data"]) for o in j["outputs"]]'
  fi
  : >"$tmp/digests"
  for i in $(seq 1 $N); do
    id=$run_id-$route-$i
    expect "POST ${url#"$base"} ($id)" "$(http POST "$url" "$body" "$id")" 200
    "$PY" -c 'import hashlib, json, sys; j = json.load(open(sys.argv[1])); print(hashlib.sha256(json.dumps(eval(sys.argv[2])).encode()).hexdigest())' \
      "$tmp/body" "$key" >>"$tmp/digests" || fail "POST ${url#"$base"} ($id): no outputs in $(head -c 200 "$tmp/body")"
  done
  distinct=$(sort -u "$tmp/digests" | wc -l)
  [ "$distinct" = 1 ] || fail "POST ${url#"$base"}: $distinct different outputs for the same body (sha256 of each: $(paste -sd' ' "$tmp/digests"))"
  spread=$(served "$run_id-$route-")
  while read -r s n; do
    [ "$n" -ge 1 ] || fail "POST ${url#"$base"}: $s served none of the $N requests (replicas' logs: $(paste -sd' ' - <<<"$spread"))"
  done <<<"$spread"
  total=$(awk '{t += $2} END {print t}' <<<"$spread")
  expect "POST ${url#"$base"}: requests in the replicas' logs" "$total" $N
  via=$(nginx_upstreams "$run_id-$route-" | awk '{print $2}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
  say "POST ${url#"$base"} x $N, the same body: all 200, 1 distinct output (sha256 $(head -c 12 "$tmp/digests")...); replicas' logs: $(awk '{printf "%s %s, ", $1, $2}' <<<"$spread" | sed 's/, $//'); nginx's log: ${via%, }"
done

# ---- 7. one replica drained under load ----------------------------------------------------
# Two clients send /v1/encode through nginx back to back while $DRAINED is
# stopped: podman stop's SIGTERM starts its 5 s drain (it serves on, each
# answer with Connection: close), then it stops listening and exits 0.  Every
# request must get its 200: nginx retries on another replica what a refused
# or closed connection cut.  The load goes on 4 s after the replica is gone.
load() {
  local n=0 code
  while [ ! -e "$tmp/stop" ] && [ $SECONDS -lt $((SECONDS0 + 90)) ]; do
    n=$((n + 1))
    code=$(curl -sS -o "$tmp/load-$1.body" -w '%{http_code} %{time_total}' --max-time 30 -X POST "$base/v1/encode" \
             -H 'Content-Type: application/json' -H "X-Request-Id: $run_id-load$1-$n" \
             --data-binary "@$tmp/v1.json" 2>>"$tmp/curl.err") || code="000 0"
    # when it ended, status, seconds it took, id
    printf '%s %s %s\n' "$(date +%s.%N)" "$code" "$run_id-load$1-$n" >>"$tmp/load-$1.codes"
  done
}
SECONDS0=$SECONDS
: >"$tmp/load-1.codes"; : >"$tmp/load-2.codes"
load 1 & loaders+=($!)
load 2 & loaders+=($!)
sleep 1
drained=${C[$DRAINED]}
t_stop=$(date +%s.%N)
t0=$SECONDS
pm 60 stop -t 20 "$drained" >/dev/null || fail "podman stop $drained failed"
stop_s=$((SECONDS - t0))
t_gone=$(date +%s.%N)
sleep 4
: >"$tmp/stop"
for p in "${loaders[@]}"; do wait "$p" || true; done
loaders=()

expect "$drained's exit status after podman stop" "$(pm 30 inspect --format '{{.State.ExitCode}}' "$drained")" 0
pm 30 logs "$drained" >"$tmp/drained.log" 2>&1
for phase in "draining for 5 s" "drain period is over" "attnd: stopped"; do
  grep -qF "$phase" "$tmp/drained.log" || fail "$drained's log has no '$phase'"
done
say "podman stop $DRAINED ($drained): drained and exited with status 0 after $stop_s s; its log:"
grep -E 'SIGTERM|drain|no longer accepting|stopped' "$tmp/drained.log" | sed 's/^/    /'

cat "$tmp"/load-*.codes >"$tmp/codes"
total=$(wc -l <"$tmp/codes")
bad=$(awk '$2 != 200' "$tmp/codes")
[ -z "$bad" ] || fail "requests through nginx failed while $DRAINED was stopped: $(wc -l <<<"$bad") of $total: $(head -n 5 <<<"$bad" | paste -sd';' -) (curl: $(tail -n 3 "$tmp/curl.err" 2>/dev/null | paste -sd';' -))"
[ "$total" -ge 20 ] || fail "only $total requests sent during the drain check (expected at least 20)"
during=$(awk -v a="$t_stop" -v b="$t_gone" '$1 >= a && $1 <= b' "$tmp/codes" | wc -l)
after=$(awk -v b="$t_gone" '$1 > b' "$tmp/codes" | wc -l)
nginx_upstreams "$run_id-load" >"$tmp/load-upstreams"
by_replica=$(awk '{n = split($2, u, ","); print u[n]}' "$tmp/load-upstreams" | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
retried=$(awk '$2 ~ /,/' "$tmp/load-upstreams")
say "load through nginx (2 clients, /v1/encode): $total requests, all 200: $during while $DRAINED drained and exited, $after after it was gone"
say "  time per request: $(sort -n -k3 "$tmp/codes" | awk '{t[NR] = $3} END {printf "median %.0f ms, max %.0f ms", t[int((NR + 1) / 2)] * 1000, t[NR] * 1000}'); $(awk '$3 > 1' "$tmp/codes" | wc -l) over 1 s"
say "  answered by (nginx's log): ${by_replica%, }"
if [ -n "$retried" ]; then
  say "  retried by nginx on another replica: $(wc -l <<<"$retried") ($(awk '{print $2 " (" $3 ")"}' <<<"$retried" | sort | uniq -c | awk '{$1 = $1 "x"; print}' | paste -sd';' -))"
else
  say "  retried by nginx on another replica: none needed"
fi
drained_served=$(grep -c -- " $run_id-load" "$tmp/drained.log" || true)
say "  $DRAINED's own log: $drained_served of them served by it before it stopped"
errs=$(pm 30 logs "${C[nginx]}" 2>&1 |
         grep -o 'connect() failed ([^)]*)\|upstream timed out ([^)]*) while [a-z ]*\|upstream prematurely closed connection\|upstream server temporarily disabled\|no live upstreams' |
         sort | uniq -c | awk '{c = $1; $1 = ""; printf "%s%s x%s", (NR > 1 ? "; " : ""), substr($0, 2), c}') || true
say "  nginx's error log: ${errs:-nothing about the replicas}"

# After: the two replicas left answer everything; /health through nginx is 200.
for i in 1 2 3 4 5 6; do
  expect "POST /v1/encode after $DRAINED stopped ($run_id-after-$i)" "$(http POST "$base/v1/encode" "$tmp/v1.json" "$run_id-after-$i")" 200
done
after_spread=$(nginx_upstreams "$run_id-after-" | awk '{n = split($2, u, ","); print u[n]}' | sort | uniq -c | awk '{printf "%s %s, ", $2, $1}')
case $after_spread in *"$DRAINED "*) fail "after $DRAINED stopped, nginx still got answers from it: $after_spread" ;; esac
expect "GET /health through nginx after $DRAINED stopped" "$(http GET "$base/health")" 200
say "after: 6 x /v1/encode -> 200 from ${after_spread%, }; GET /health through nginx -> 200"

say "passed (podman-compose $(podman-compose version 2>/dev/null | awk '/^podman-compose/ {print $NF}' | head -n 1), project $PROJECT)"
