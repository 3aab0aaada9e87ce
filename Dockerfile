# mcp-hub: a static binary on distroless, running as non-root 65532.
#   docker build --build-arg VERSION=$(hack/version.sh) --build-arg COMMIT=$(git rev-parse --short=7 HEAD) \
#     --build-arg DATE=$(date -u +%Y-%m-%d) -t ghcr.io/purko-io/mcp-hub:dev .
# A release image is not built here but from the release binaries
# (Dockerfile.release, .goreleaser.yaml).
# The image holds only the hub: stdio upstreams (`command:` in the config)
# need their runtime (node, python, ...) in an image of your own.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .git is not in the context (.dockerignore): the version comes in as build
# arguments; without them `mcp-hub version` says v0.0.0-dev.
ARG VERSION=
ARG COMMIT=
ARG DATE=
# No cgo: the binary is static, the image needs no libc; netgo/osusergo
# keep name and user lookups in Go.
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false \
    go build -trimpath -tags netgo,osusergo \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.date=${DATE}" \
      -o /out/mcp-hub ./cmd/mcp-hub

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/mcp-hub /mcp-hub
# The image's own config: callers without credentials at level restricted
# (read-only tools), no servers. Without it the hub refuses to start on
# 0.0.0.0. Mount your own config over it, or pass --config.
COPY docker/config.yaml /etc/mcp-hub/config.yaml
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/mcp-hub"]
CMD ["serve", "--listen", "0.0.0.0:8080", "--config", "/etc/mcp-hub/config.yaml"]
