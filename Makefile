# snug: all setup on a fresh Debian 12 machine (root) is done by these targets.
# Kubernetes binaries are built once into $(HOME)/.cache/snug and reused.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
KUBERNETES_VERSION ?= 1.35.4
# Versions the lab supports and the tests run against (snug-lab --help);
# the gate runs the core e2e on CORE_VERSION and a smoke on the others.
E2E_VERSIONS ?= 1.35.4 1.36.3 1.37.2
CORE_VERSION ?= 1.35.4
E2E_TIMEOUT ?= 40m
LAB := $(CURDIR)/lab
FULL_TIMEOUT ?= 90m
TIERS := BIN=$(BIN) GO=$(GO) E2E_VERSIONS="$(E2E_VERSIONS)" CORE_VERSION=$(CORE_VERSION) E2E_TIMEOUT=$(E2E_TIMEOUT) FULL_TIMEOUT=$(FULL_TIMEOUT) bash $(LAB)/hack/tiers.sh
# The version linked into snug's binaries and the images' tag.
VERSION ?= $(shell git describe --always --dirty --abbrev=12 2>/dev/null || echo dev)
VERSION_LDFLAGS := -X github.com/snug-dev/snug/internal/version.Version=$(VERSION)
# make images REGISTRY=10.213.0.2:5000 also pushes (the lab's registry).
REGISTRY ?=

.PHONY: all build deps test test-full unit e2e e2e-v2 demo lab-up lab-down lab-status fmt vet clean generate images helm depaware

all: build

deps:
	@command -v $(GO) >/dev/null || { echo "go is not on PATH (Go 1.26 is expected at /usr/local/go/bin)"; exit 1; }
	$(GO) mod download
	cd $(LAB) && $(GO) mod download

# The product module: snug, the user's CLI (and kubectl-snug), snug-agent and
# snug-controller, the in-cluster components (static: they are what the
# images hold). The lab module (lab/): snug-lab, the lab, demo and benches
# (it starts snug-agent-bench for bench agent), snug-load the lab's load
# generator.
build: deps
	$(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/ ./cmd/snug
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w $(VERSION_LDFLAGS)' -o $(BIN)/ ./cmd/snug-agent ./cmd/snug-controller
	cd $(LAB) && $(GO) build -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/ ./cmd/snug-lab ./cmd/snug-agent-bench
	cd $(LAB) && CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o $(BIN)/snug-load ./cmd/snug-load
	ln -sf snug $(BIN)/kubectl-snug

# Deep copies and the CRD from api/v1alpha1's markers. controller-gen runs from
# the module proxy and stays out of go.mod; commit what it writes.
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
# Then the chart gets a copy of the CRD, and config/rbac and config/deploy
# are charts/snug rendered with its default values (internal/lab/helm).
generate:
	$(CONTROLLER_GEN) object crd:crdVersions=v1 paths=./api/v1alpha1 output:crd:artifacts:config=config/crd
	cp config/crd/*.yaml charts/snug/files/crds/
	cd $(LAB) && $(GO) build -o $(BIN)/genconfig ./internal/lab/helm/genconfig
	$(BIN)/genconfig

# The helm CLI that the chart tests, the lab and the demo run: helm.sh/helm/v3
# built once from the module proxy into $(HOME)/.cache/snug/helm.
helm: build
	$(BIN)/snug-lab helm version --short

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...
	cd $(LAB) && $(GO) vet ./... && $(GO) vet -tags e2e ./e2e/

# The CI gate (lab/docs/testing.md): the product's unit tests with -race, the
# lab's unit tests, the api tier on every version, the core e2e on
# CORE_VERSION and the smoke on the other versions; it ends by printing each
# tier's wall time and the 20 slowest tests (output in bin/test-out).
test: build vet helm
	$(TIERS) gate

# Everything on every version: the gate's tiers plus the full tier (the
# cgroup-v2 node's whole run, chaos, upstream VPA, the demo, the benches'
# e2e). Its wall time is printed at the end.
test-full: build vet helm
	$(TIERS) full

# The unit tiers alone.
unit: helm
	$(GO) test -race -shuffle=on ./...
	cd $(LAB) && $(GO) test -shuffle=on ./...

# Every e2e test on every version (TestMain brings each lab up and down).
e2e: build
	@set -e; for v in $(E2E_VERSIONS); do \
	  echo "=== e2e on Kubernetes $$v"; \
	  $(BIN)/snug-lab build --kubernetes-version $$v --v2-node; \
	  cd $(LAB) && SNUG_E2E_TIER=all SNUG_KUBERNETES_VERSION=$$v SNUG_BIN=$(BIN) $(GO) test -tags e2e -count=1 -timeout $(E2E_TIMEOUT) -v ./e2e/ 2>&1 | tee /tmp/snug-e2e-$$v.log; \
	  test $${PIPESTATUS[0]} -eq 0; cd $(CURDIR); \
	done

# The product binaries' allow-lists (cmd/*/depaware.txt), rewritten from what
# they link now: review the diff.
depaware:
	SNUG_UPDATE_DEPS=1 $(GO) test -count=1 -run '^TestDeps$$' ./cmd/snug ./cmd/snug-agent ./cmd/snug-controller

# The cgroup-v2 node's whole e2e, per version: TestV2Node with
# SNUG_E2E_V2=full (the field report's experiments, TestAgent's and
# TestAutoscale's cases on that node, about 11 minutes a version); make
# test-full runs it too (the full tier), make test does not.
e2e-v2: build
	@set -e; for v in $(E2E_VERSIONS); do \
	  echo "=== e2e on the cgroup-v2 node, Kubernetes $$v"; \
	  $(BIN)/snug-lab build --kubernetes-version $$v --v2-node; \
	  cd $(LAB) && SNUG_E2E_V2=full SNUG_KUBERNETES_VERSION=$$v SNUG_BIN=$(BIN) $(GO) test -tags e2e -count=1 -timeout 30m -v -run TestV2Node ./e2e/ 2>&1 | tee /tmp/snug-e2e-v2-$$v.log; \
	  test $${PIPESTATUS[0]} -eq 0; cd $(CURDIR); \
	done

demo: build
	$(BIN)/snug-lab demo --kubernetes-version $(KUBERNETES_VERSION)

# The images of snug-agent and snug-controller (internal/lab/image): an OCI
# layout and archives in bin/images; with REGISTRY set, pushed there too.
images: build
	$(BIN)/snug-lab images build --bin $(BIN) --out $(BIN)/images --version $(VERSION)
	@if [ -n "$(REGISTRY)" ]; then $(BIN)/snug-lab images push --bin $(BIN) --registry $(REGISTRY) --version $(VERSION); fi

lab-up: build
	$(BIN)/snug-lab up --kubernetes-version $(KUBERNETES_VERSION)

lab-down: build
	$(BIN)/snug-lab down

lab-status: build
	$(BIN)/snug-lab status

clean:
	rm -rf $(BIN)
