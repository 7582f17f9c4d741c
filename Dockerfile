# The Hookwright operator image: a static binary on distroless, run as
# nonroot (65532). Build: docker build -t hookwright:latest .
# test/manifests builds the binary with this file's go build line.

FROM golang:1.26.8-bookworm AS builder
WORKDIR /src
# Modules first, so source edits do not invalidate the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags="-s -w" -o /hookwright .

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=builder /hookwright /hookwright
USER 65532:65532
ENTRYPOINT ["/hookwright"]
