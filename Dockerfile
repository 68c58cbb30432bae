# syntax=docker/dockerfile:1
# tokvec: token + positional embeddings over HTTP, from a memory-mapped table.
#
#   podman build -t tokvec .        (or: docker build -t tokvec .)
#   podman run --rm --read-only -p 8080:8080 tokvec
#   podman run --rm --read-only -p 8080:8080 \
#       -v /srv/models/potion-base-8M:/models/potion-base-8M:ro \
#       -e TOKVEC_MODEL=/models/potion-base-8M tokvec    (a static model)
#
# Two stages on debian:bookworm-slim. The build stage compiles build/tokvec
# and makes the default table (torch.manual_seed(123), 50257x256 token table
# + 1024x256 learned positions, 52 MB). The GPT-2 tokenizer for text inputs
# (encoder.json + vocab.bpe) comes from the build context, data/gpt2/, where
# `make data` (tools/fetch_gpt2.sh) puts it, and is checked here again
# against tools/gpt2.sha256: the build itself reaches no registry but
# Debian's apt mirror, so no npm and no TLS interception problem inside it.
# Run `make data` (or tools/fetch_gpt2.sh data/gpt2) before a bare
# `podman build`; `make container-test` does. The runtime stage adds to the
# base only the three shared libraries tokvec needs that bookworm-slim lacks
# (libmicrohttpd12, libjansson4, libuv1; libnettle8 and libgnutls30 are
# already in the base), the stripped binary and the table. No compiler, no
# headers, no apt lists; runs as a non-root user; tokvec writes nothing at
# run time, so a read-only root filesystem works.

ARG DEBIAN=debian:bookworm-slim

# ---- build ------------------------------------------------------------------
FROM ${DEBIAN} AS build
ENV DEBIAN_FRONTEND=noninteractive
# Build dependencies (the Makefile's DEB_BUILD), and the .deb files of the
# runtime libraries, fetched here so the runtime stage needs no apt lists.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
        gcc libc6-dev make pkg-config \
        libmicrohttpd-dev libjansson-dev libuv1-dev nettle-dev unicode-data \
 && mkdir -p /debs && cd /debs \
 && apt-get download libmicrohttpd12 libjansson4 libuv1 \
 && rm -rf /var/lib/apt/lists/*
# The tokenizer first (it never changes), checked against the pinned sums:
# a missing file fails the COPY (run `make data`), a wrong one the check.
COPY tools/gpt2.sha256 data/gpt2/encoder.json data/gpt2/vocab.bpe /data/gpt2/
RUN cd /data/gpt2 \
 && sha256sum -c gpt2.sha256 \
 && rm gpt2.sha256 \
 && chmod 0444 encoder.json vocab.bpe
WORKDIR /src
COPY . .
# `make build/tokvec` (not `make all`): the deps are installed above.
# DATA_DIR=/data: the binary's built-in default tokenizer is /data/gpt2
# (server/cli/datadir.c), a default that gives way, with a warning, to a
# table it does not fit (your own, mounted: README "Docker").
RUN make -j"$(nproc)" DATA_DIR=/data build/tokvec \
 && strip --strip-unneeded build/tokvec \
 && build/tokvec --version
RUN mkdir -p /data \
 && build/tokvec init --vocab 50257 --dim 256 --context 1024 \
        --positional learned --seed 123 -o /data/gpt2-256.safetensors \
 && chmod 0444 /data/gpt2-256.safetensors

# ---- runtime ----------------------------------------------------------------
FROM ${DEBIAN} AS runtime
# Runtime libraries from the build stage's .debs (bind-mounted, so they leave
# no bytes in the image), dpkg's logs dropped, one unprivileged user, and
# /models: where a model directory is mounted (read-only, /models/NAME).
RUN --mount=type=bind,from=build,source=/debs,target=/debs \
    dpkg -i /debs/*.deb \
 && rm -f /var/log/dpkg.log /var/log/apt/* \
 && groupadd --system --gid 10001 tokvec \
 && useradd --system --uid 10001 --gid tokvec --no-create-home \
        --home-dir /nonexistent --shell /usr/sbin/nologin tokvec \
 && mkdir -m 0755 /models
# The table first: it changes less often than the binary.
COPY --from=build /data/gpt2-256.safetensors /data/gpt2-256.safetensors
COPY --from=build /data/gpt2 /data/gpt2
COPY --from=build /src/build/tokvec /usr/local/bin/tokvec

LABEL org.opencontainers.image.title="tokvec" \
      org.opencontainers.image.description="token + positional embeddings over HTTP from a memory-mapped safetensors table"

# No TOKVEC_TOKENIZER: the built-in default (/data/gpt2) serves text with
# the default table and steps aside for a table it does not fit, where a
# named tokenizer would stop start-up. No TOKVEC_TABLE either: the binary's
# default table, data/gpt2-256.safetensors, resolves against WORKDIR / to
# the table above, and a static model (a directory mounted read-only at
# /models/NAME, TOKVEC_MODEL=/models/NAME or --model) replaces both defaults,
# where a TOKVEC_TABLE set here would make it a start-up error.
ENV TOKVEC_HOST=0.0.0.0 \
    TOKVEC_PORT=8080
WORKDIR /
USER 10001:10001
EXPOSE 8080
# tokvec probe exits 0 on HTTP 200 (the slim base has no curl). It checks
# port 8080: if TOKVEC_PORT is changed, override the health check too.
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s --retries=3 \
    CMD ["/usr/local/bin/tokvec", "probe", "http://127.0.0.1:8080/health"]
# Exec form: tokvec is PID 1 and gets SIGTERM directly (stop accepting,
# /ready -> 503, drain up to 30 s, exit 0).
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/tokvec", "serve"]
CMD []
