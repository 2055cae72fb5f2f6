# shellcheck shell=bash
# check_lib.sh - the helpers tools/ci/container_check.sh,
# tests/deploy/compose_check.sh and tools/ci/fresh_check.sh share: podman
# bounded in time, HTTP requests and what their answers hold, request bodies,
# health checks, the debootstrap base image.  Sourced, not run; the caller
# defines say and fail, $tmp (its temporary directory) and $PY (Debian's
# python3).

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

# remove_tmp: removes $tmp, after unmounting what is mounted under it (a
# debootstrap stopped half-way may leave /proc or /sys mounted in its root).
remove_tmp() {
  awk -v t="$tmp/" 'index($2, t) == 1 {print $2}' /proc/mounts | sort -r | xargs -r umount -l 2>/dev/null || true
  rm -rf --one-file-system "$tmp"
}

# ---- the base image ------------------------------------------------------------
# BASE (the image's full name), SUITE and mirror (empty: the host's) are the
# caller's; make container-check and make fresh-check both start from it.

# The Debian mirror this machine's apt uses (deb822 URIs: lines, or one-line
# "deb URL suite" entries), or deb.debian.org.
host_mirror() {
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i} /^deb / {print ($2 ~ /^\[/ ? $3 : $2)}' |
        grep -E '/debian/?$' | head -n 1) || true
  echo "${m:-http://deb.debian.org/debian}"
}

# With a registry, `podman pull debian:bookworm-slim` gets it.  Without one,
# it is made as Debian's official images are: debootstrap's minbase, then
# "slimmed" like debuerreotype does (no docs, man pages or translations, now
# or from later installs; apt keeps no .deb caches and no uncompressed lists),
# with apt sources for the suite, its updates and its security archive.
make_base() {
  local root=$tmp/rootfs sec log=$tmp/debootstrap.log
  [ -n "$mirror" ] || mirror=$(host_mirror)
  sec="${mirror%/debian*}/debian-security"
  say "making $BASE: debootstrap --variant=minbase $SUITE from $mirror (once; about 30 s)"
  timeout 900 debootstrap --variant=minbase "$SUITE" "$root" "$mirror" >"$log" 2>&1 ||
    { tail -n 20 "$log" >&2; fail "debootstrap failed (log above)"; }

  cat >"$root/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $mirror
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $sec
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  rm -f "$root/etc/apt/sources.list"

  cat >"$root/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# A slim image: no documentation, manuals or translations (licences stay).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/man/*
EOF
  echo 'force-unsafe-io' >"$root/etc/dpkg/dpkg.cfg.d/docker-apt-speedup"
  local clean='"rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true";'
  cat >"$root/etc/apt/apt.conf.d/docker-clean" <<EOF
// No package caches left in an image's layers.
DPkg::Post-Invoke { $clean };
APT::Update::Post-Invoke { $clean };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  printf 'Acquire::GzipIndexes "true";\n' >"$root/etc/apt/apt.conf.d/docker-gzip-indexes"
  printf 'Acquire::Languages "none";\n' >"$root/etc/apt/apt.conf.d/docker-no-languages"
  printf 'APT::AutoRemove::SuggestsImportant "false";\n' >"$root/etc/apt/apt.conf.d/docker-autoremove-suggests"

  (cd "$root" &&
     find usr/share/doc usr/share/groff usr/share/info usr/share/linda usr/share/lintian/overrides \
          usr/share/locale usr/share/man -mindepth 1 ! -type d \
          ! -path 'usr/share/doc/*/copyright' ! -path usr/share/locale/locale.alias -delete 2>/dev/null
     find usr/share/doc usr/share/groff usr/share/info usr/share/locale usr/share/man \
          -mindepth 1 -type d -empty -delete 2>/dev/null
     rm -rf var/cache/apt/archives/*.deb var/cache/apt/*.bin var/lib/apt/lists/* var/log/* \
            debootstrap
     : >etc/resolv.conf        # podman supplies these two
     echo localhost >etc/hostname) || true

  # podman import: a root directory's tar as a one-layer image, named as the
  # Dockerfile's FROM expects; CMD as Debian's image has it.
  tar --numeric-owner -C "$root" -c . |
    pm 600 import --quiet --change 'CMD ["bash"]' --message "debootstrap --variant=minbase $SUITE, slimmed" - "$BASE" >/dev/null ||
    fail "podman import of the debootstrap root failed"
  rm -rf "$root"
}

# ensure_base NEW: makes $BASE when podman lacks it (or NEW is 1), then says
# its size.
ensure_base() {
  if [ "$1" = 1 ] || ! pm 30 image exists "$BASE"; then
    make_base
  else
    say "$BASE: already there ($(pm 30 image inspect --format '{{.Created.Format "2006-01-02"}}' "$BASE"); --new-base makes it again)"
  fi
  say "$BASE: $(pm 30 image inspect --format '{{.Size}}' "$BASE" | awk '{printf "%.1f MB", $1 / 1e6}')"
}
