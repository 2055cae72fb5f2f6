#!/usr/bin/env bash
# container_check.sh - builds attnd's image with a real container engine
# (podman) and checks the container it runs: the recipe `make container-check`
# follows, written out so that anyone with Docker or podman can see how the
# image is built and what it must do.
#
#   bash tools/ci/container_check.sh [--worktree] [--new-base] [--mirror URL]
#
#   --worktree   build from the work tree as it is (uncommitted changes too)
#                instead of a fresh clone of HEAD (the default, what CI checks)
#   --new-base   make the base image again even if it exists
#   --mirror URL the Debian mirror for debootstrap and the image's apt sources
#                (default: the one this machine's apt uses)
#
# Steps:
#   1. the base image: debian:bookworm-slim, made here from debootstrap when
#      podman does not have it (no registry on the project's machines);
#   2. a fresh `git clone` of HEAD, and `podman build` of its Dockerfile: the
#      build time and the image's size;
#   3. ldd of /usr/local/bin/attnd inside the image: every library found, and
#      every package the runtime stage installs owns one of them;
#   4. the container, run the strict way (--read-only, --cap-drop=ALL,
#      no-new-privileges, the image's non-root user, 127.0.0.1:<free port>):
#      its HEALTHCHECK reports healthy, and /, /v1/encode and
#      /v2/models/encoder/infer answer through the mapped port;
#   5. `podman stop` drains (ATTND_DRAIN_SECONDS=2) and ends it with status 0;
#   6. a second container with a weights file mounted read-only and the
#      README's variables: /v1/model's weights.sha256 is the file's sha256sum;
#      SIGTERM starts a drain (/health 503 while requests are still served),
#      and a second signal ends it, with status 0;
#   7. deploy/kubernetes/base's and overlays/weights' Deployment and
#      ConfigMap under podman kube play: the probes' routes answer, the
#      security context holds, the forward threads come from the CPU limit,
#      the overlay's claim (a podman volume here) serves its weights file.
# The containers are always removed; the images stay (debian:bookworm-slim,
# attnd and the build's layer cache), so the next run is faster.
#
# Needs root (rootful podman) and Debian's podman buildah runc netavark
# iptables debootstrap git curl python3 (make container-check installs them).
# Exit status: 0 all passed, 1 a check failed, 2 it cannot run here.
set -euo pipefail

say() { printf 'container-check: %s\n' "$*"; }
fail() { say "FAILED: $*" >&2; exit 1; }
cannot() { say "cannot run: $*" >&2; exit 2; }

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(git -C "$here" rev-parse --show-toplevel 2>/dev/null) || cannot "$here is not in a git work tree"

worktree=0 new_base=0 mirror=""
while [ $# -gt 0 ]; do
  case $1 in
    --worktree) worktree=1 ;;
    --new-base) new_base=1 ;;
    --mirror) [ $# -ge 2 ] || cannot "--mirror needs a URL"; mirror=$2; shift ;;
    --mirror=*) mirror=${1#--mirror=} ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) cannot "unknown option $1 (--help)" ;;
  esac
  shift
done

[ "$(id -u)" = 0 ] || cannot "needs root (podman runs rootful here)"
for c in podman runc debootstrap git curl sha256sum tar timeout; do
  command -v "$c" >/dev/null || cannot "$c is not installed (make container-check installs it)"
done
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || cannot "$PY is not installed"

IMAGE=attnd                                   # what the build is tagged
BASE=docker.io/library/debian:bookworm-slim   # the Dockerfile's FROM, by its full name
SUITE=bookworm

# podman's settings for this host (tools/ci/containers.conf says why each).
export CONTAINERS_CONF=$here/containers.conf
# podman runs an image's HEALTHCHECK every --interval from a systemd timer;
# with no systemd (containers, CI sandboxes) it logs an error for each
# container instead.  DISABLE_HC_SYSTEMD=true is podman's own switch for "no
# timer" (its test suite uses it): this script runs the check itself with
# `podman healthcheck run`.  (podman 4.3 ignores --health-interval=disable
# when the image has a HEALTHCHECK.)
export DISABLE_HC_SYSTEMD=true

tmp=$(mktemp -d "${TMPDIR:-/tmp}/attnd-container-check.XXXXXX")
containers=()
kubes=()   # pods played from these files, torn down with podman kube down
volumes=() # podman volumes made here
# Always: remove this run's containers (after a failure, printing the log of
# the one under check), then the temporary directory.  The images stay.
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for c in "${containers[@]}"; do
    if [ "$rc" != 0 ] && [ "$c" = "${containers[-1]}" ] && pm 30 container exists "$c" 2>/dev/null; then
      say "the last lines of $c's log:"
      pm 30 logs --tail 30 "$c" 2>&1 | sed 's/^/    /' || true
    fi
    pm 60 rm --force --time 0 "$c" >/dev/null 2>&1 || say "could not remove container $c (podman rm -f $c)"
  done
  [ ${#containers[@]} = 0 ] || say "removed the containers (${containers[*]}); kept the images"
  for k in "${kubes[@]}"; do pm 120 kube down "$k" >/dev/null 2>&1 || say "could not tear down $k"; done
  for v in "${volumes[@]}"; do pm 60 volume rm --force "$v" >/dev/null 2>&1 || say "could not remove volume $v"; done
  remove_tmp
  exit "$rc"
}
trap cleanup EXIT
trap 'say "interrupted (SIGINT)"; exit 130' INT
trap 'say "interrupted (SIGTERM)"; exit 143' TERM

# ---- helpers -------------------------------------------------------------------

# pm (every podman command), http, j, expect, free_port, embeddings,
# wait_healthy, wait_log: tools/ci/check_lib.sh, shared with
# tests/deploy/compose_check.sh.
# shellcheck source=tools/ci/check_lib.sh
. "$here/check_lib.sh"

# ---- 1. the base image ---------------------------------------------------------
# debian:bookworm-slim, made here from debootstrap when podman lacks it
# (ensure_base, tools/ci/check_lib.sh; make fresh-check runs in the same image).
ensure_base "$new_base"

# ---- 2. build ------------------------------------------------------------------
if [ $worktree = 1 ]; then
  ctx=$repo
  say "context: the work tree $repo as it is (--worktree)"
else
  # What CI and a user get: the committed tree, nothing else.  The
  # Dockerfile's COPY lines pick what goes in.
  ctx=$tmp/src
  git clone --quiet "$repo" "$ctx" || fail "git clone $repo failed"
  say "context: a fresh clone of $repo at $(git -C "$ctx" log -1 --format='%h (%s)')"
fi

# podman build flags:
#   --isolation=chroot   RUN steps in a chroot of the stage's root instead
#                        of an OCI container: no runtime, cgroups or network
#                        namespace for the build (the recipe measured here);
#   --network host       RUN steps use this machine's network and resolver:
#                        apt-get reaches the mirror with no bridge or NAT;
#   --pull=never         the base image is the local one (step 1): never ask
#                        a registry;
#   --format docker      a Docker-format image: the OCI format has no
#                        HEALTHCHECK, so podman would drop it.
# Layers are cached (podman's default): a second build with the same inputs
# takes seconds.
say "podman build --isolation=chroot --network host --pull=never --format docker -t $IMAGE"
t0=$SECONDS
pm 2400 build --isolation=chroot --network host --pull=never --format docker \
  -t "$IMAGE" -f "$ctx/Dockerfile" "$ctx" >"$tmp/build.log" 2>&1 ||
  { tail -n 40 "$tmp/build.log" >&2; fail "podman build failed (the last lines above)"; }
build_s=$((SECONDS - t0))
cached=$(grep -c -- '--> Using cache' "$tmp/build.log" || true)
size=$(pm 30 image inspect --format '{{.Size}}' "$IMAGE")
say "built $IMAGE in $build_s s ($cached steps from the layer cache); image size $(awk -v s="$size" 'BEGIN {printf "%.1f MB (%d bytes)", s / 1e6, s}')"
expect "the image's HEALTHCHECK" "$(pm 30 image inspect --format '{{if .HealthCheck}}{{index .HealthCheck.Test 0}}{{end}}' "$IMAGE")" CMD
user=$(pm 30 image inspect --format '{{.Config.User}}' "$IMAGE")
case $user in ""|root|0|0:*|root:*) fail "the image's USER is '$user', not a non-root user" ;; esac

# ---- 3. the runtime stage holds what attnd loads ------------------------------
# ldd inside the image: no library "not found", and each package the last
# stage installs with apt-get owns a library attnd loads (dpkg -S).
pkgs=$(awk '/^FROM/ {s = ""} {s = s $0 "\n"} END {printf "%s", s}' "$ctx/Dockerfile" |
         sed -e ':a' -e '/\\$/N; s/\\\n//; ta' |
         awk '/apt-get install/ {on = 0; for (i = 1; i <= NF; i++) {
                if ($i == "install") on = 1; else if ($i == "&&") on = 0;
                else if (on && $i !~ /^-/) print $i }}')
[ -n "$pkgs" ] || fail "no apt-get install in the Dockerfile's last stage"
# shellcheck disable=SC2016
pm 120 run --rm --network none --read-only --cap-drop=ALL --no-healthcheck \
  --entrypoint /bin/bash "$IMAGE" -c '
  out=$(ldd /usr/local/bin/attnd) || exit 1
  if grep -q "not found" <<<"$out"; then echo "$out"; exit 1; fi
  awk "\$2 == \"=>\" && \$3 ~ /^\\// {print \$1, \$3}" <<<"$out" | while read -r name lib; do
    real=$(readlink -f "$lib")
    owner=""
    for p in "$lib" "/usr$lib" "$real" "${real#/usr}"; do
      owner=$(dpkg -S "$p" 2>/dev/null | head -n 1 | cut -d: -f1) && [ -n "$owner" ] && break
    done
    echo "$name ${owner:-?}"
  done' >"$tmp/ldd" 2>&1 || { cat "$tmp/ldd" >&2; fail "ldd /usr/local/bin/attnd in the image: a library is missing"; }
say "ldd /usr/local/bin/attnd in the image: all $(wc -l <"$tmp/ldd") libraries found, from $(awk '!seen[$2]++ {print $2}' "$tmp/ldd" | paste -sd' ' -)"
for p in $pkgs; do
  awk -v p="$p" '$2 == p || $2 ~ "^" p ":" {f = 1} END {exit !f}' "$tmp/ldd" ||
    fail "the runtime stage installs $p, but attnd loads no library of it"
done
say "the runtime stage installs only packages attnd loads a library from: $(paste -sd' ' - <<<"$pkgs")"

# ---- 4. run it the strict way ------------------------------------------------------
# podman run flags:
#   --read-only                          the image's filesystem is read-only
#                                        (podman mounts tmpfs on /tmp and /run);
#   --cap-drop=ALL                       no Linux capabilities at all: attnd
#                                        binds 8080, not a privileged port;
#   --security-opt no-new-privileges     no setuid path back to root;
#   -p 127.0.0.1:PORT:8080               the container's 8080 on this machine's
#                                        loopback only (netavark's NAT rules);
#   (no --user)                          the image's USER, checked below.
strict=(--read-only --cap-drop=ALL --security-opt no-new-privileges)

# start NAME PORT [podman run options...]: the container, detached.
start() {
  local name=$1 port=$2; shift 2
  containers+=("$name")
  pm 120 run -d --replace --name "$name" --label attnd.container-check=1 "${strict[@]}" \
    -p "127.0.0.1:$port:8080" "$@" "$IMAGE" >/dev/null || fail "podman run $name failed"
}

port=$(free_port)
main=attnd-check-$$
start "$main" "$port" -e ATTND_DRAIN_SECONDS=2
say "started $main: ${strict[*]}, 127.0.0.1:$port -> 8080, ATTND_DRAIN_SECONDS=2"
uid=$(pm 30 exec "$main" id -u) || fail "podman exec $main id -u failed"
[ "$uid" != 0 ] || fail "$main runs as root"
say "$main runs as $user (uid $uid)"

wait_healthy "$main" 60
say "HEALTHCHECK: healthy (podman healthcheck run $main)"

base=http://127.0.0.1:$port
expect "GET /v1/model" "$(http GET "$base/v1/model")" 200
d=$(j 'j["hyperparameters"]["d_model"]') h=$(j 'j["hyperparameters"]["n_heads"]') model=$(j 'j["name"]')

expect "GET /" "$(http GET "$base/")" 200
title=$(grep -o '<title>[^<]*</title>' "$tmp/body" | head -n 1)
[ -n "$title" ] || fail "GET /: no <title> in the page"
say "GET / -> 200, $title"

printf '{"embeddings": %s}' "$(embeddings 1 3 "$d")" >"$tmp/v1.json"
expect "POST /v1/encode" "$(http POST "$base/v1/encode" "$tmp/v1.json")" 200
shape=$(j '[len(j["outputs"]), len(j["outputs"][0]), sorted({len(r) for r in j["outputs"][0]})]')
expect "POST /v1/encode outputs shape" "$shape" "[1, 3, [$d]]"
say "POST /v1/encode -> 200, outputs [1][3][$d]"

printf '{"id": "container-check", "inputs": [{"name": "embeddings", "datatype": "FP32", "shape": [1, 3, %s], "data": %s}]}' \
  "$d" "$(embeddings 1 3 "$d")" >"$tmp/v2.json"
expect "POST /v2/models/$model/infer" "$(http POST "$base/v2/models/$model/infer" "$tmp/v2.json")" 200
v2=$(j '[(o["name"], o["shape"]) for o in j["outputs"]]')
expect "POST /v2/models/$model/infer outputs" "$v2" "[('outputs', [1, 3, $d]), ('attention', [1, $h, 3, 3])]"
say "POST /v2/models/$model/infer -> 200, outputs $v2"

# ---- 5. podman stop drains, then attnd exits 0 ----------------------------------
# podman stop sends SIGTERM and waits up to -t seconds before SIGKILL (exit
# status 137): status 0 within it means attnd drained and stopped by itself.
t0=$SECONDS
pm 60 stop -t 20 "$main" >/dev/null || fail "podman stop $main failed"
stop_s=$((SECONDS - t0))
expect "$main's exit status after podman stop" "$(pm 30 inspect --format '{{.State.ExitCode}}' "$main")" 0
pm 30 logs "$main" >"$tmp/log" 2>&1
for phase in "draining for 2 s" "drain period is over" "attnd: stopped"; do
  grep -qF "$phase" "$tmp/log" || fail "$main's log has no '$phase'"
done
say "podman stop -t 20: exit status 0 after $stop_s s; the log:"
grep -E 'SIGTERM|drain|no longer accepting|stopped' "$tmp/log" | sed 's/^/    /'

# ---- 6. a weights file mounted read-only -------------------------------------------
# The README's way: the file at /models/model.safetensors, read-only, named
# by ATTND_WEIGHTS, with its hyperparameters in ATTND_* variables.  The
# fixture is the safetensors reader's tiny model (d_model 4, 2 heads, d_ff 8,
# relu, one layer: tools/fixtures/make_bad_safetensors.py).
weights=$ctx/tests/fixtures/safetensors/model/valid.safetensors
[ -f "$weights" ] || fail "no $weights"
port=$(free_port)
wctr=attnd-check-$$-weights
start "$wctr" "$port" -v "$weights:/models/model.safetensors:ro" \
  -e ATTND_WEIGHTS=/models/model.safetensors -e ATTND_D_MODEL=4 -e ATTND_N_HEADS=2 -e ATTND_D_FF=8 \
  -e ATTND_DRAIN_SECONDS=60
say "started $wctr: $(basename "$weights") mounted read-only, ATTND_D_MODEL=4 ATTND_N_HEADS=2 ATTND_D_FF=8, 127.0.0.1:$port"
wait_healthy "$wctr" 60
base=http://127.0.0.1:$port
expect "GET /v1/model ($wctr)" "$(http GET "$base/v1/model")" 200
want=$(sha256sum "$weights" | cut -d' ' -f1)
expect "weights.sha256" "$(j 'j["weights"]["sha256"]')" "$want"
expect "weights.source" "$(j 'j["weights"]["source"]')" /models/model.safetensors
expect "d_model" "$(j 'j["hyperparameters"]["d_model"]')" 4
printf '{"embeddings": %s}' "$(embeddings 1 3 4)" >"$tmp/v1w.json"
expect "POST /v1/encode ($wctr)" "$(http POST "$base/v1/encode" "$tmp/v1w.json")" 200
say "healthy; /v1/model: weights.sha256 $want = sha256sum of the file; /v1/encode -> 200"

# The drain seen from outside: SIGTERM, then /health is 503 "draining" while
# /v1/encode is still served; a second signal (podman stop's SIGTERM) ends
# the drain long before its 60 s, with status 0.
pm 30 kill --signal TERM "$wctr" >/dev/null || fail "podman kill --signal TERM $wctr failed"
wait_log "$wctr" "draining for 60 s" 30
expect "GET /health while draining" "$(http GET "$base/health")" 503
expect "/health's status while draining" "$(j 'j["status"]')" draining
expect "POST /v1/encode while draining" "$(http POST "$base/v1/encode" "$tmp/v1w.json")" 200
t0=$SECONDS
pm 60 stop -t 20 "$wctr" >/dev/null || fail "podman stop $wctr failed"
stop_s=$((SECONDS - t0))
expect "$wctr's exit status" "$(pm 30 inspect --format '{{.State.ExitCode}}' "$wctr")" 0
pm 30 logs "$wctr" >"$tmp/log" 2>&1
for phase in "the drain ends now" "attnd: stopped"; do
  grep -qF "$phase" "$tmp/log" || fail "$wctr's log has no '$phase'"
done
say "SIGTERM: /health 503 draining, /v1/encode still 200; podman stop (a second SIGTERM): exit status 0 after $stop_s s"

# ---- 7. the Kubernetes manifests under podman kube play ----------------------------
# deploy/kubernetes/base and overlays/weights as `kubectl apply -k` would
# build them (kubectl kustomize), their ConfigMap and Deployment played by
# podman against the image just built: the pod runs with the manifest's
# securityContext (non-root, read-only root filesystem, all capabilities
# dropped, RuntimeDefault seccomp), attnd.json from the ConfigMap volume,
# forward threads from the CPU limit; its probes' routes answer through a
# hostPort.  Kubernetes reaches a pod through its Service; podman has no
# Services, so the rendered Deployment gets `hostIP: 127.0.0.1` and a free
# `hostPort`, and one replica (two would need two host ports).  The
# overlay's claim attnd-weights is a podman volume made here holding a
# model.safetensors of the overlay's hyperparameters.  The other kinds
# (Service, HPA, PDB) are no podman kinds: make k8s-check validates them.
# Each is torn down with podman kube down.
command -v kubectl >/dev/null || fail "kubectl is not installed (make container-check installs Debian's kubernetes-client)"
say "kubectl: $(kubectl version --client -o json | "$PY" -c 'import json, sys; v = json.load(sys.stdin); print(v["clientVersion"]["gitVersion"], "kustomize", v.get("kustomizeVersion", "v2.0.3 (built in)"))')"

# kube_play DIR: plays DIR's ConfigMap and Deployment; sets kube (the played
# file), kctr (its attnd container) and kbase (its URL), once ready.
kube_play() {
  local dir=$1 port
  port=$(free_port)
  kube=$tmp/kube-$(basename "$dir").yaml
  # (stderr aside: kubectl 1.21 and later warn that the fields kubectl 1.20
  # reads are deprecated, deploy/kubernetes/app/kustomization.yaml)
  kubectl kustomize "$ctx/$dir" >"$tmp/rendered.yaml" 2>"$tmp/kustomize.log" ||
    { cat "$tmp/kustomize.log" >&2; fail "kubectl kustomize $dir failed"; }
  "$PY" - "$tmp/rendered.yaml" "$kube" "$port" <<'PYEOF'
import sys
src, dst, port = sys.argv[1], sys.argv[2], sys.argv[3]
docs = open(src).read().split("\n---\n")
keep = [d for d in docs if "\nkind: ConfigMap\n" in "\n" + d + "\n" or "\nkind: Deployment\n" in "\n" + d + "\n"]
assert len(keep) == 2, "expected a ConfigMap and a Deployment"
out = []
for d in keep:
    if "kind: Deployment" in d:
        d = d.replace("  replicas: 2\n", "  replicas: 1\n", 1)
        marker = "        - containerPort: 8080\n          name: http\n"
        assert marker in d, "the Deployment's container port is not where expected"
        d = d.replace(marker, marker + "          hostIP: 127.0.0.1\n          hostPort: %s\n" % port, 1)
    out.append(d)
open(dst, "w").write("\n---\n".join(out) + "\n")
PYEOF
  kubes+=("$kube")
  pm 300 kube play "$kube" >"$tmp/kubeplay.log" 2>&1 || { cat "$tmp/kubeplay.log" >&2; fail "podman kube play $dir failed"; }
  # The Deployment's pod is attnd-pod-0 (podman 4.3; attnd-pod in others),
  # its container <pod>-attnd.
  kctr=$(pm 30 ps --format '{{.Names}}' | grep -E '^attnd-pod(-0)?-attnd$' | head -n 1) || true
  [ -n "$kctr" ] || fail "podman kube play started no attnd container: $(pm 30 ps -a --format '{{.Names}} {{.Status}}' | tr '\n' ';')"
  kbase=http://127.0.0.1:$port
  local deadline=$((SECONDS + 60))
  until [ "$(http GET "$kbase/v2/health/ready")" = 200 ]; do
    [ $SECONDS -lt $deadline ] || fail "$dir under kube play: /v2/health/ready is not 200 after 60 s"
    sleep 0.5
  done
  # The probes as the kubelet runs them, from outside the container (podman
  # turns an httpGet probe into a `curl` run inside it, and the image has no
  # curl: the kubelet needs none).
  probes=$("$PY" - "$kube" <<'PYEOF'
import re, sys
print(" ".join(sorted(set(re.findall(r"path: (/v2/health/\w+)", open(sys.argv[1]).read())))))
PYEOF
)
  [ -n "$probes" ] || fail "$dir: the Deployment has no httpGet probes"
  for route in $probes; do
    expect "$dir under kube play: the probe's GET $route" "$(http GET "$kbase$route")" 200
  done
  expect "$dir: forward threads from limits.cpu" "$(pm 30 exec "$kctr" printenv ATTND_FORWARD_THREADS)" 2
  expect "$dir: the ConfigMap's attnd.json" \
    "$(pm 30 exec "$kctr" printenv ATTND_CONFIG) $(pm 30 exec "$kctr" sh -c 'test -r "$ATTND_CONFIG" && echo readable')" \
    "/etc/attnd/attnd.json readable"
  expect "$dir: user" "$(pm 30 exec "$kctr" id -u)" 10001
  pm 30 exec "$kctr" sh -c 'touch /x' 2>/dev/null && fail "$dir: the root filesystem is writable"
  expect "$dir: capabilities" "$(pm 30 exec "$kctr" sh -c "awk '/^CapEff/ {print \$2}' /proc/self/status")" 0000000000000000
  pm 30 logs "$kctr" >"$tmp/klog" 2>&1
  grep -q "ready (1 compute worker x 2 forward threads" "$tmp/klog" ||
    fail "$dir: attnd did not take 2 forward threads: $(tail -3 "$tmp/klog")"
}

# kube_down: tears the last played file's pod down, and the volume kube play
# made for its ConfigMap.
kube_down() {
  pm 120 kube down "$kube" >/dev/null 2>&1 || fail "podman kube down $kube failed"
  unset 'kubes[-1]'
  local cm
  for cm in $(awk '/^kind: ConfigMap/ {c = 1} c && /^  name: / {print $2; c = 0}' "$kube"); do
    pm 60 volume rm --force "$cm" >/dev/null 2>&1 || true
  done
}

kube_play deploy/kubernetes/base
expect "base: GET /v1/model" "$(http GET "$kbase/v1/model")" 200
expect "base: the seeded model's d_model" "$(j 'j["hyperparameters"]["d_model"]')" 512
printf '{"embeddings": %s}' "$(embeddings 1 3 512)" >"$tmp/kv1.json"
expect "base: POST /v1/encode" "$(http POST "$kbase/v1/encode" "$tmp/kv1.json")" 200
say "kube play: deploy/kubernetes/base as pod $kctr: probes $probes 200, uid 10001, read-only root, no capabilities, 2 forward threads from limits.cpu, the ConfigMap's attnd.json, /v1/encode 200"
kube_down

# overlays/weights: the claim attnd-weights as a podman volume holding a
# model.safetensors of the overlay's hyperparameters (d_model 768, 12 heads,
# d_ff 3072: a BERT-base-sized block, made here with fixed values; the
# tensor names are PyTorch's, docs/model.md).
vol=attnd-weights
pm 30 volume exists "$vol" && fail "a podman volume $vol exists already: remove it (podman volume rm $vol)"
"$PY" - "$tmp/weights" <<'PYEOF'
import json, os, struct, sys
D, F = 768, 3072
shapes = {"self_attn.in_proj_weight": [3 * D, D], "self_attn.in_proj_bias": [3 * D],
          "self_attn.out_proj.weight": [D, D], "self_attn.out_proj.bias": [D],
          "linear1.weight": [F, D], "linear1.bias": [F], "linear2.weight": [D, F], "linear2.bias": [D],
          "norm1.weight": [D], "norm1.bias": [D], "norm2.weight": [D], "norm2.bias": [D]}
header, data, off = {}, [], 0
for i, (name, shape) in enumerate(sorted(shapes.items())):
    n = 1
    for s in shape:
        n *= s
    value = 1.0 if name.startswith("norm") and name.endswith("weight") else 0.01 * ((i % 5) - 2)
    data.append(struct.pack("<f", value) * n)
    header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + 4 * n]}
    off += 4 * n
h = json.dumps(header).encode()
h += b" " * (-(8 + len(h)) % 8)
os.makedirs(sys.argv[1])
with open(os.path.join(sys.argv[1], "model.safetensors"), "wb") as f:
    f.write(struct.pack("<Q", len(h)) + h + b"".join(data))
PYEOF
tar -C "$tmp/weights" -cf "$tmp/weights.tar" model.safetensors
pm 30 volume create "$vol" >/dev/null || fail "podman volume create $vol failed"
volumes+=("$vol")
pm 60 volume import "$vol" "$tmp/weights.tar" || fail "podman volume import $vol failed"
kube_play deploy/kubernetes/overlays/weights
expect "weights: GET /v1/model" "$(http GET "$kbase/v1/model")" 200
want=$(sha256sum "$tmp/weights/model.safetensors" | cut -d' ' -f1)
expect "weights: weights.sha256" "$(j 'j["weights"]["sha256"]')" "$want"
expect "weights: weights.source" "$(j 'j["weights"]["source"]')" /models/model.safetensors
expect "weights: d_model" "$(j 'j["hyperparameters"]["d_model"]')" 768
expect "weights: activation" "$(j 'j["hyperparameters"]["activation"]')" gelu
printf '{"embeddings": %s}' "$(embeddings 1 3 768)" >"$tmp/kv2.json"
expect "weights: POST /v1/encode" "$(http POST "$kbase/v1/encode" "$tmp/kv2.json")" 200
say "kube play: deploy/kubernetes/overlays/weights as pod $kctr: the claim attnd-weights as a podman volume, model.safetensors served (sha256 ${want:0:12}..., d_model 768, gelu), probes $probes 200, /v1/encode 200"
kube_down

say "passed (build $build_s s, image $(awk -v s="$size" 'BEGIN {printf "%.1f MB", s / 1e6}'))"
