# The Hookwright operator image: a static binary on distroless, run as
# nonroot (65532), for every platform from one build machine:
#   make docker-build IMG=registry.example.com/hookwright:v0.2.0
#   make docker-buildx IMG=... PLATFORMS=linux/amd64,linux/arm64
# The builder runs on the build machine's platform and cross-compiles for
# the target's (BuildKit sets BUILDPLATFORM, TARGETOS and TARGETARCH).
# Base images are pinned by digest (a tag can move); `make docker-digests`
# prints the current ones to update them. test/manifests builds the binary
# with this file's go build line, for amd64 and arm64.

FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm@sha256:dc9ad6c05acc7a88e5b71bde60a5fe3bd4b9f0db209011711b464107438a8107 AS builder
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
# Modules first, so source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o /hookwright .

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
ARG VERSION=0.1.0
ARG REVISION=unknown
LABEL org.opencontainers.image.title="hookwright" org.opencontainers.image.description="Installs CRD conversion webhooks and rotates their certificates" org.opencontainers.image.source="https://github.com/hookwright/hookwright" org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${REVISION}"
COPY --from=builder /hookwright /hookwright
USER 65532:65532
ENTRYPOINT ["/hookwright"]
