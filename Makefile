# Hookwright. `make help` lists the targets.
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

KUBE_VERSION ?= v1.37.2
CONTROL_PLANE_DIR ?= $(CURDIR)/bin/control-plane/$(KUBE_VERSION)
CONTROLLER_TOOLS_VERSION ?= v0.23.0
CONTROLLER_GEN ?= $(CURDIR)/bin/tools/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
export HOOKWRIGHT_CONTROL_PLANE_DIR := $(CONTROL_PLANE_DIR)
# kubectl's built-in kustomize, from the control plane: no separate install.
KUSTOMIZE ?= $(CONTROL_PLANE_DIR)/kubectl kustomize
# The operator version `make bundle` writes into the CSV. A release bumps
# this default, so that `make verify` regenerates the committed bundle.
VERSION ?= 0.1.0
# The CSV's createdAt: the release's date, bumped with VERSION (fixed, so
# that make verify reproduces the committed bundle).
CREATED_AT ?= 2026-11-23T00:00:00Z
# Release images: fully qualified and versioned (never latest). A digest
# may follow (IMG=registry.example.com/hookwright:v0.2.0@sha256:...): the
# bundle then pulls exactly that image.
REGISTRY ?= ghcr.io/hookwright
IMG ?= $(REGISTRY)/hookwright:v$(VERSION)
BUNDLE_IMG ?= $(REGISTRY)/hookwright-bundle:v$(VERSION)
CATALOG_IMG ?= $(REGISTRY)/hookwright-catalog:v$(VERSION)
CONTAINER_TOOL ?= docker
PLATFORMS ?= linux/amd64,linux/arm64
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# opm (operator-registry), built from Go modules like the control plane.
# The control plane (KUBE_VERSION), opm and promtool compile most of what the
# tests compile; their modules in hack/tools*/go.mod are held to the versions
# the tests use (hack/toolmods checks it), so a cold machine compiles those
# packages once. That is why promtool is the newest Prometheus whose
# modules are not newer than the tests' (v0.312.0 needs a newer fsnotify;
# v0.316.0, used before, newer gRPC, OpenTelemetry, x/sys and x/net).
OPM_VERSION ?= v1.64.0
OPM ?= $(CURDIR)/bin/tools/opm-$(OPM_VERSION)/opm
export HOOKWRIGHT_OPM := $(OPM)
# promtool (Prometheus), built from Go modules, tests the alerting rules.
PROMETHEUS_VERSION ?= v0.311.0
PROMTOOL ?= $(CURDIR)/bin/tools/promtool-$(PROMETHEUS_VERSION)/promtool
export HOOKWRIGHT_PROMTOOL := $(PROMTOOL)

.PHONY: help
help: ## List the targets.
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

# Packages `make test-race` runs under the race detector: the test ground
# (proxy, kubelet stand-in, pods: goroutines serving the API server). Not
# part of make test: its instrumented build of the whole client-go closure
# cost 10.3 CPU-minutes on a cold machine (measured at a9bbb59), a quarter of
# what keeps make test over 40 minutes on 2 cores. Add packages with:
# make test-race RACE_PACKAGES="./internal/testcluster ./controllers"
RACE_PACKAGES ?= ./internal/testcluster

# The Go garbage collector's target for make test: its compilers collect
# less often, for more memory (measured: 7% less compile CPU at 400), and so
# do the suites' processes and the control planes they start (measured on
# test/migration with warm caches: 504 CPU-s at Go's default, 406 at 400,
# wall 289 s -> 237 s). The machine has memory to spare, not CPU. make bench
# and make demo keep Go's default: the bench measures the operator's memory.
TEST_GOGC ?= 400

# make test builds with the Dockerfile's flags (CGO_ENABLED=0, -trimpath):
# the compiled packages of the test builds are then the ones the image
# test's amd64 build, the previous release's build and the binaries the
# suites build need, instead of a second compile of every dependency on a
# cold machine.
test: export CGO_ENABLED := 0
# -vet=off: go vet ./... below runs every analyzer over every package of the
# module once. go test's own vet pass (a subset of the analyzers, so another
# cache key) would analyze the whole dependency closure again, in make
# test's go test and in the go test commands the suites run (the docs'
# commands: measured 134 CPU-s for ./examples/crontab/... on a cold cache).
test: export GOFLAGS := $(strip $(shell go env GOFLAGS) -trimpath -vet=off)
test: export GOGC := $(TEST_GOGC)

.PHONY: test
test: ## Build the control plane and tools if needed, check generated files, then run every test (one shared API server per package).
	@# The control plane first, alone: it compiles most of what the other
	@# tools compile (std, client-go, gRPC), and go commands side by side
	@# each compile a package they share (measured: 7 CPU-minutes twice on a
	@# cold machine). What opm, promtool and controller-gen compile beyond
	@# it hardly overlaps, so they build side by side.
	$(MAKE) control-plane
	$(MAKE) -j3 $(OPM) $(PROMTOOL) $(CONTROLLER_GEN)
	$(MAKE) verify
	@# Every analyzer over every package, once (go test's vet is off: see
	@# GOFLAGS above).
	go vet ./...
	@# -p 4: the suites wait on their API servers; four at a time keep the
	@# two cores busy. failureslast repeats the failed packages' failures
	@# at the end: go test prints a package's output when it ends, so an
	@# early failure would otherwise scroll out of the tail CI shows.
	go run ./hack/failureslast go test -p 4 -ldflags=-w ./... -count=1 -timeout 45m -v

.PHONY: test-race
test-race: control-plane ## Run RACE_PACKAGES' tests under the race detector (the test ground by default; builds the whole closure instrumented: ~10 CPU-minutes cold).
	CGO_ENABLED=1 go test -race -vet=off $(RACE_PACKAGES) -count=1 -timeout 45m -v

# How long `make fuzz` explores once its instrumented build is done.
FUZZTIME ?= 1m

.PHONY: fuzz
fuzz: ## Fuzz the CronTab example's round trip beyond its seed corpus for FUZZTIME (make test runs the seeds; the instrumented build alone takes minutes).
	go test ./examples/crontab -run '^$$' -fuzz '^FuzzRoundTrip$$' -fuzztime $(FUZZTIME)

.PHONY: demo
demo: control-plane ## Run the main job on a local control plane (Ctrl-C to stop).
	go run ./cmd/demo

.PHONY: bench
bench: control-plane ## Benchmarks against cert-controller v0.16.0 on a local control plane; writes bench/results.md (20-40 min on 2 cores, as fast as the machine is that day: 20m10s at 79e408a, 23m17s at f1f9d31; the goal is 25).
	go build -o bin/hookwright .
	go build -o bin/bench-certcontroller ./bench/certcontroller
	go run ./bench/cmd/bench --operator bin/hookwright --anchor bin/bench-certcontroller --out bench/results.md

.PHONY: control-plane
control-plane: ## Build kube-apiserver, kube-controller-manager, etcd and kubectl $(KUBE_VERSION) from Go modules into bin/ (once; ~14 min cold on 2 cores).
	CONTROL_PLANE_DIR=$(CONTROL_PLANE_DIR) KUBE_VERSION=$(KUBE_VERSION) ./hack/build-control-plane.sh

$(CONTROLLER_GEN):
	GOBIN=$(dir $(CONTROLLER_GEN)) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_TOOLS_VERSION)

.PHONY: fmt
fmt: ## gofmt every Go file.
	gofmt -w $$(git ls-files '*.go')

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate the CRD and RBAC manifests from markers (embedded Kubernetes docs trimmed by hack/crdtrim), and the admission guard from controllers/guard.
	$(CONTROLLER_GEN) rbac:roleName=hookwright-manager crd:generateEmbeddedObjectMeta=true paths="./api/...;./controllers/..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	go run ./hack/crdtrim config/crd/bases/operators.hookwright.dev_webhookinstalls.yaml
	go run ./hack/guardgen config/guard/install-authority.yaml

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: kustomize
kustomize: $(CONTROL_PLANE_DIR)/kubectl ## Make sure kubectl (and its kustomize) is built: KUSTOMIZE is "kubectl kustomize".

$(CONTROL_PLANE_DIR)/kubectl:
	$(MAKE) control-plane

.PHONY: bundle
bundle: manifests kustomize ## Regenerate the OLM bundle (bundle/, bundle.Dockerfile) from config/: make bundle IMG=<registry>/hookwright:vX.Y.Z VERSION=X.Y.Z.
	@mkdir -p bin/bundle
	go run ./hack/setimage config/manager/kustomization.yaml hookwright $(IMG)
	$(KUSTOMIZE) config/default > bin/bundle/default.yaml
	$(KUSTOMIZE) config/samples > bin/bundle/samples.yaml
	go run ./hack/bundlegen --version=$(VERSION) --created-at=$(CREATED_AT) --manifests=bin/bundle/default.yaml --samples=bin/bundle/samples.yaml --out=.

.PHONY: verify
verify: ## Regenerate CRD, RBAC, deepcopy and bundle; fail if that changes api/, config/ or bundle/.
	$(MAKE) manifests generate bundle
	@changed=$$(git status --porcelain -- api config bundle bundle.Dockerfile); \
	if [[ -n $$changed ]]; then \
	  echo "$$changed"; \
	  git --no-pager diff -- api config bundle bundle.Dockerfile; \
	  echo "verify: generated files are out of date (or not committed): run 'make manifests generate bundle' and commit the result." >&2; \
	  exit 1; \
	fi

##@ Release (needs a container tool: CONTAINER_TOOL=docker or podman)

.PHONY: docker-build
docker-build: ## Build the operator image for this machine's platform: make docker-build IMG=...
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: docker-push
docker-push: ## Push the operator image.
	$(CONTAINER_TOOL) push $(IMG)

.PHONY: docker-buildx
docker-buildx: ## Build and push the operator image for every platform in PLATFORMS (BuildKit cross-compiles).
	$(CONTAINER_TOOL) buildx build --push --platform=$(PLATFORMS) --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: docker-digests
docker-digests: ## Print the current digests of the Dockerfile's base images, to update their pins.
	@for image in golang:1.26.8-bookworm gcr.io/distroless/static-debian12:nonroot; do \
	  echo "$$image@$$($(CONTAINER_TOOL) buildx imagetools inspect $$image --format '{{json .Manifest.Digest}}' | tr -d '"')"; \
	done

.PHONY: bundle-build
bundle-build: ## Build the bundle image (run make bundle IMG=... VERSION=... first).
	$(CONTAINER_TOOL) build -f bundle.Dockerfile -t $(BUNDLE_IMG) .

.PHONY: bundle-push
bundle-push: ## Push the bundle image.
	$(CONTAINER_TOOL) push $(BUNDLE_IMG)

$(OPM):
	cd hack/tools/opm && CGO_ENABLED=0 go build -tags containers_image_openpgp -ldflags "-s -w -X github.com/operator-framework/operator-registry/cmd/opm/version.opmVersion=$(OPM_VERSION)" -o $(OPM) github.com/operator-framework/operator-registry/cmd/opm

.PHONY: opm
opm: $(OPM) ## Build opm $(OPM_VERSION) from Go modules into bin/tools.

# remove_all_sd leaves out Prometheus' service-discovery plugins (AWS, Azure,
# GCE, ... SDKs): rule checks and rule unit tests need none of them, and they
# were most of promtool's cold build.
$(PROMTOOL):
	cd hack/tools/promtool && CGO_ENABLED=0 go build -tags remove_all_sd -ldflags "-s -w" -o $(PROMTOOL) github.com/prometheus/prometheus/cmd/promtool

.PHONY: promtool
promtool: $(PROMTOOL) ## Build promtool (Prometheus $(PROMETHEUS_VERSION)) from Go modules into bin/tools.

.PHONY: catalog-build
catalog-build: $(OPM) ## Render bundle/ as the file-based catalog bin/catalog (package, alpha channel, bundle BUNDLE_IMG), validate it with opm, write bin/catalog.Dockerfile.
	go run ./hack/catalog --opm=$(OPM) --bundle-dir=bundle --bundle-image=$(BUNDLE_IMG) --out=bin/catalog

.PHONY: catalog-image
catalog-image: catalog-build ## Build the catalog image from bin/catalog.
	$(CONTAINER_TOOL) build -f bin/catalog.Dockerfile -t $(CATALOG_IMG) bin

.PHONY: catalog-push
catalog-push: ## Push the catalog image.
	$(CONTAINER_TOOL) push $(CATALOG_IMG)
