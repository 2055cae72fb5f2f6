# attnd in a container: build stage with the same steps as the README
# (make deps, then make), runtime stage with only the packages that hold the
# shared libraries build/attnd loads (ldd), run as a non-root user.
#
#   docker build -t attnd .
#   docker run --rm -p 8080:8080 attnd
#   docker run --rm -p 8080:8080 -v "$PWD/model.safetensors:/models/model.safetensors:ro" \
#       -e ATTND_WEIGHTS=/models/model.safetensors -e ATTND_D_MODEL=768 -e ATTND_N_HEADS=12 \
#       -e ATTND_D_FF=3072 -e ATTND_ACTIVATION=gelu attnd
#
# podman builds it too, with --format docker: an OCI-format image has no
# HEALTHCHECK, and podman drops it.  make container-check
# (tools/ci/container_check.sh, the recipe step by step) builds this file from a
# fresh clone with podman and checks the container: every library ldd wants
# is there and each package below holds one; it runs --read-only
# --cap-drop=ALL as the image's user; the HEALTHCHECK passes; /, /v1/encode
# and /v2 answer through a mapped port; a weights file mounted read-only is
# served; podman stop drains and attnd exits 0.
#
# docker stop / podman stop wait 10 s by default before SIGKILL: keep
# ATTND_DRAIN_SECONDS (server.drain_seconds) below their -t, or raise -t.

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends make \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY core core
COPY config config
COPY server server
# The README's steps: install what the build needs, then build.
RUN make deps && make WERROR=1 build/attnd

FROM debian:bookworm-slim
# What ldd build/attnd resolves to: OpenBLAS, jansson, utf8proc, Oniguruma, libmicrohttpd (with
# GnuTLS) and nettle; the rest (libc, libgfortran, ...) comes with them.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libopenblas0-pthread libjansson4 libmicrohttpd12 libnettle8 libutf8proc2 libonig5 \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin attnd
COPY --from=build /src/build/attnd /usr/local/bin/attnd
COPY config/attnd.json /etc/attnd/attnd.json
USER attnd
# OPENBLAS_CORETYPE is left to OpenBLAS's own detection; where it does not
# know the CPU (attnd warns at start-up, and /v1/model's platform says
# blas_core_generic), run with -e OPENBLAS_CORETYPE=SkylakeX (AVX-512),
# Haswell or Zen (AVX2): docs/deploy.md, "Know the BLAS you run on".
ENV ATTND_HOST=0.0.0.0 \
    ATTND_PORT=8080
EXPOSE 8080
# No curl in the image: bash's /dev/tcp speaks enough HTTP for /health.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${ATTND_PORT:-8080} && printf 'GET /health HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
ENTRYPOINT ["/usr/local/bin/attnd"]
