#!/bin/sh
# entrypoint.sh - the attnd-nginx image's entrypoint (deploy/nginx/Dockerfile).
#
# Renders /etc/nginx/attnd/attnd.conf (deploy/nginx/attnd.conf as it is in the
# repository) to /tmp/nginx/attnd.conf with exactly the `server` lines of its
# `upstream attnd { ... }` block replaced: one line per replica named in
# ATTND_UPSTREAMS (host:port, separated by spaces or commas), each with the
# parameters of the file's first server line (max_fails=1 fail_timeout=3s),
# at that line's place.  Every other line is copied unchanged.  Then it waits
# (up to ATTND_UPSTREAM_WAIT_SECONDS) until every replica's name resolves,
# since nginx resolves them once, at start, and refuses to start when one does
# not, and runs nginx in the foreground (nginx.conf: daemon off).
set -euf   # -f: no globbing of ATTND_UPSTREAMS

say() { printf 'attnd-nginx: %s\n' "$*" >&2; }

src=/etc/nginx/attnd/attnd.conf
dir=/tmp/nginx
out=$dir/attnd.conf
ups=$(printf '%s' "${ATTND_UPSTREAMS:-}" | tr ',' ' ')
wait_s=${ATTND_UPSTREAM_WAIT_SECONDS:-30}

# shellcheck disable=SC2086  # split into one argument per replica (no globbing: -f)
set -- $ups
[ $# -gt 0 ] || { say "ATTND_UPSTREAMS is empty: set it to the replicas' host:port, separated by spaces"; exit 2; }
for u in "$@"; do
  case $u in
    *[!A-Za-z0-9._:-]* | :* | *:) say "ATTND_UPSTREAMS: '$u' is not a host:port"; exit 2 ;;
  esac
done
case $wait_s in '' | *[!0-9]*) say "ATTND_UPSTREAM_WAIT_SECONDS: '$wait_s' is not a number of seconds"; exit 2 ;; esac

mkdir -p "$dir"
awk -v ups="$*" '
  BEGIN { n = split(ups, u, " ") }
  # The upstream block: from "upstream attnd {" to the first line that is
  # only "}" (attnd.conf has no other braces inside it).
  /^[ \t]*upstream[ \t]+attnd[ \t]*\{/ { inside = 1; print; next }
  inside && /^[ \t]*\}/ { inside = 0; print; next }
  inside && /^[ \t]*server[ \t]+[^ \t;]+/ {
    found++
    if (found == 1) {
      indent = $0; sub(/[^ \t].*$/, "", indent)
      params = $0; sub(/^[ \t]*server[ \t]+[^ \t;]+/, "", params)
      for (i = 1; i <= n; i++) print indent "server " u[i] params
    }
    next
  }
  { print }
  END { if (!found) exit 3 }
' "$src" >"$out.new" || { say "$src: no server line in an \"upstream attnd\" block to replace"; exit 2; }
mv "$out.new" "$out"
say "upstream attnd, from ATTND_UPSTREAMS:"
awk '/^[ \t]*upstream[ \t]+attnd[ \t]*\{/ {u = 1} u && /^[ \t]*server[ \t]/ {sub(/^[ \t]*/, "    "); print} u && /^[ \t]*\}/ {exit}' "$out" >&2

# Each replica's name resolves (compose's DNS: aardvark-dns under podman,
# the embedded DNS under Docker) before nginx looks them up.
deadline=$(( $(date +%s) + wait_s ))
for u in "$@"; do
  host=${u%:*}
  until getent hosts "$host" >/dev/null; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      say "$host does not resolve after $wait_s s; starting nginx anyway (it will say why it cannot)"
      break
    fi
    sleep 1
  done
done

exec nginx -e stderr
