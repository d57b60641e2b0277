# syntax=docker/dockerfile:1
# Builds the adapter's two commands into one small image:
#   /usr/local/bin/openwop-server  (cmd/server; the default command)
#   /usr/local/bin/openwop-worker  (cmd/worker)
# docker-compose.yml runs both against Temporal + PostgreSQL.
#
# The Go version must match go.mod's `go` directive (the embedded Temporal
# server pins it; see docs/temporal.md).
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# Pure Go (SQLite is modernc.org/sqlite), so a static binary.
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags='-s -w' -o /out/openwop-server ./cmd/server && \
    go build -trimpath -ldflags='-s -w' -o /out/openwop-worker ./cmd/worker && \
    mkdir -p /data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
COPY --from=build --chown=65532:65532 /data /data
# In a container the HTTP listener must bind all interfaces; logs are JSON.
ENV OPENWOP_HTTP_ADDR=0.0.0.0:8080 \
    OPENWOP_LOG_FORMAT=json \
    OPENWOP_DATA_DIR=/data
# /data holds published reports (and the SQLite file if the server runs
# without TEMPORAL_ADDRESS, i.e. with Temporal embedded).
VOLUME ["/data"]
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/openwop-server"]
