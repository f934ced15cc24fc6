# zeroclaw-bridge container image.
#
#   docker build -t zeroclaw-bridge \
#     --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg DATE=2025-01-02T03:04:05Z .
#   (`just image` passes the stamps of scripts/stamp.sh; without them the
#   binary says "dev".) With podman or buildah add `--format docker`
#   (`CONTAINER=podman just image` does): an OCI-format image has no HEALTHCHECK.
#
# The binary is built like a release one (scripts/build-binary.sh: static,
# stripped, stamped), for the platform asked for (--platform linux/arm64,
# linux/arm/v7 cross-compile on the build host). The runtime image is Debian
# slim rather than distroless: the ZeroClaw agent the bridge starts is the
# host's binary, bind-mounted, and wants glibc and a shell for its tools.
#
# Runs as uid 10001 unless told otherwise; the bridge's own state lives in
# the /data volume. ZeroClaw's directory (brain.db, config.toml, the
# workspace) must be mounted read-write: the bridge writes brain.db, and
# /admin writes the persona files and config.toml. docs/operations.md has the
# compose snippet (packaging/compose.bridge.yml) and the non-root variant.

ARG GO_IMAGE=docker.io/library/golang:1.26-trixie
ARG RUNTIME_IMAGE=docker.io/library/debian:trixie-slim

FROM --platform=$BUILDPLATFORM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH
ARG TARGETVARIANT
ARG VERSION=""
ARG COMMIT=""
ARG DATE=""
RUN arch="${TARGETARCH:-$(go env GOARCH)}" \
 && goarm="" \
 && if [ "$arch" = arm ]; then goarm="${TARGETVARIANT#v}"; goarm="${goarm:-7}"; fi \
 && VERSION="$VERSION" COMMIT="$COMMIT" DATE="$DATE" \
    scripts/build-binary.sh /out/zeroclaw-bridge "$TARGETOS" "$arch" "$goarm"

FROM ${RUNTIME_IMAGE}
# ca-certificates for the model APIs, tzdata for TZ and DOTTY_LOCAL_TZ.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates tzdata \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 bridge \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/bridge --create-home --shell /usr/sbin/nologin bridge \
 && mkdir -p /data/logs /data/state /data/personas \
 && chown -R 10001:10001 /data \
 && chmod 0750 /data
COPY --from=build /out/zeroclaw-bridge /usr/local/bin/zeroclaw-bridge

# The bridge's own files under /data; every other setting keeps bridge.py's
# default (docs/configuration.md) and can be set with -e or compose.
ENV BRIDGE_HOST=0.0.0.0 \
    PORT=8080 \
    CONVO_LOG_DIR=/data/logs \
    DOTTY_KID_MODE_STATE=/data/state/kid-mode \
    DOTTY_SMART_MODE_STATE=/data/state/smart-mode \
    DOTTY_TOOL_ALLOWLIST=/data/state/tool-allowlist \
    GREETER_STATE_PATH=/data/state/greeter_state.json \
    SIDECAR_PERSONAS_DIR=/data/personas
VOLUME ["/data"]
USER 10001:10001
WORKDIR /data
EXPOSE 8080
# The bridge's graceful stop: let voice turns in flight finish
# (BRIDGE_SHUTDOWN_GRACE, 10 s), write queued memories (up to 30 s), stop the
# agent; give it 60 s (docker stop -t 60, compose stop_grace_period: 60s).
# The dashboard's Restart bridge and Reboot all stop the same way and exit
# with status 75: run the container with a restart policy (docker run
# --restart unless-stopped; compose.bridge.yml has it) to have it back.
STOPSIGNAL SIGTERM
# No curl or wget in the image: bash's /dev/tcp asks /health.
HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
  CMD ["/bin/bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${PORT:-8080} && printf 'GET /health HTTP/1.0\\r\\nHost: localhost\\r\\n\\r\\n' >&3 && IFS= read -r -t 4 status <&3 && [[ $status == *' 200 '* ]]"]
ENTRYPOINT ["/usr/local/bin/zeroclaw-bridge"]
