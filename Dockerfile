# syntax=docker/dockerfile:1
# The inferrail image: one static binary (CGO off) on distroless, run as the
# non-root user 65532. Build with `make image`; the same image runs the
# balancer, the sidecar, the webhook and the simulator (its first argument
# is the subcommand).

ARG GO_VERSION=1.27.3

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath \
      -ldflags "-s -w -X github.com/inferrail/inferrail/internal/buildinfo.version=${VERSION}" \
      -o /out/inferrail ./cmd/inferrail

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION=unknown
ARG CREATED=unknown
LABEL org.opencontainers.image.title="inferrail" \
      org.opencontainers.image.description="KV-cache-aware router for self-hosted LLM inference (vLLM, SGLang)" \
      org.opencontainers.image.source="https://github.com/inferrail/inferrail" \
      org.opencontainers.image.url="https://github.com/inferrail/inferrail" \
      org.opencontainers.image.documentation="https://github.com/inferrail/inferrail/blob/main/docs/kubernetes.md" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/inferrail /usr/local/bin/inferrail
USER 65532:65532
EXPOSE 8080 9090 7946 8100 9100 8443
ENTRYPOINT ["/usr/local/bin/inferrail"]
CMD ["help"]
