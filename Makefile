# Anvil's build entry points. `make devstack` and `make test` are the two
# commands the README promises; everything else supports them.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

ROOT := $(abspath .)
BIN := $(ROOT)/bin
export PATH := $(BIN):$(PATH)
# envtest finds kube-apiserver and etcd here; see internal/dev/testenv.
export ANVIL_BIN := $(BIN)
# Every Go build here uses the settings of the tools and of the image: no
# cgo, paths trimmed, no DWARF from the compiler. The build cache keys on
# all three, so with one setting the Kubernetes libraries that the tools,
# the tests and the image share compile once on a fresh machine instead of
# three times. Every binary is linked with -w, which drops DWARF anyway;
# not generating it cut the compile of client-go from 229 to 199 CPU-s.
# A GOFLAGS of the caller comes last and wins.
export CGO_ENABLED := 0
export GOFLAGS := $(strip -trimpath -gcflags=all=-dwarf=false $(filter-out -trimpath,$(GOFLAGS)))
# Every go command of a target runs the Go release of go.mod's toolchain
# line, the one the image ships, fetched from the module proxy when the
# machine has another (a GOTOOLCHAIN=local in the user's go env would keep
# the machine's). Tools, tests and image then share one build cache, and
# govulncheck judges the standard library that ships.
export GOTOOLCHAIN := $(shell sed -n 's/^toolchain //p' go.mod)

CONTROLLER_GEN := $(BIN)/controller-gen
GOLANGCI_LINT := $(BIN)/golangci-lint

# Integration packages at once. Their tests mostly wait (on two cores, two
# packages kept the CPU about 40 % busy), so a third fills the gaps.
TEST_PARALLEL ?= 3
TEST_TIMEOUT ?= 30m
# Test binaries are linked without a symbol table or DWARF: nobody runs a
# debugger on them, and it cuts the link of an integration package from
# about 7 to 4.5 CPU-seconds (measured on internal/controller/nova).
TEST_LDFLAGS ?= -s -w
# The longest integration packages, longest first. go test starts
# packages in the order it is given them, so these start first and the
# short ones fill the other slots, instead of a long package starting last
# and running alone. In make test (the long suites left out; a warm run
# on two cores, 6 December 2026) they ran novacompute 545 s, controlplane
# 333 s, nova 214 s, ovnchassis 124 s, internal/openstack 91 s,
# neutronmetadataagent 64 s, novaconfig 59 s; internal/openstack and
# novaconfig, left to ./..., started last and ran alone at the end. In make
# test-all, test/chaos (about 770 s) and test/roundtrip (about 300 s) are
# long too; novacompute and chaos take turns on the shared Nova's
# tenant_filter_tests (see openstacktest.HoldTenantFilterTests), so one
# waits while the other runs.
INTEGRATION_FIRST := ./internal/controller/novacompute ./test/chaos \
	./internal/controller/controlplane ./internal/controller/nova ./test/roundtrip \
	./internal/controller/ovnchassis ./internal/openstack ./internal/controller/neutronmetadataagent \
	./internal/novaconfig ./internal/targetcluster ./internal/dev/ociimage ./test/charts

.PHONY: all
all: build

##@ Tools

.PHONY: tools
tools: ## Build the pinned tools into bin/ (no-op when the stamp matches).
	hack/tools/build.sh

.PHONY: tools-kube tools-test tools-lint
tools-kube: ## Build only the clusters' tools: kube-*, etcd, kwok, kubectl, helm, cert-manager, controller-gen.
	hack/tools/build.sh kube

tools-test: ## Build only what the Go tests run: tools-kube without kubectl and kwokctl, which the devstack and the e2e checks use.
	hack/tools/build.sh test

tools-lint: ## Build only the linters: golangci-lint and govulncheck.
	hack/tools/build.sh lint

.PHONY: deps
deps: ## Install the Debian packages tests use (python3-nova for oslo-config-validator).
	hack/install-debian-deps.sh

##@ Code generation

.PHONY: generate
generate: ## Generate deepcopy functions for the API types.
	@test -x $(CONTROLLER_GEN) || hack/tools/build.sh kube
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/... paths=./internal/hypervisor/...

.PHONY: manifests
manifests: ## Generate CRDs under config/crd and RBAC under config/rbac.
	@test -x $(CONTROLLER_GEN) || hack/tools/build.sh kube
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) crd paths=./internal/hypervisor/... output:crd:artifacts:config=config/crd/standin
	$(CONTROLLER_GEN) rbac:roleName=anvil-operator webhook paths=./internal/... paths=./cmd/... output:rbac:artifacts:config=config/rbac output:webhook:artifacts:config=config/webhook
	@# Helm installs what crds/ holds before the chart's templates.
	rm -rf charts/anvil-operator/crds && mkdir -p charts/anvil-operator/crds && cp config/crd/bases/*.yaml charts/anvil-operator/crds/

.PHONY: verify
verify: ## Fail when generated files are out of date.
	hack/verify-generated.sh

.PHONY: lint
lint: tools-lint ## Run golangci-lint, then govulncheck against the pinned vulnerability database.
	$(GOLANGCI_LINT) run ./...
	cd $(MONITORING_MODULE) && $(GOLANGCI_LINT) run ./...
	hack/vulncheck.sh

##@ Build

.PHONY: build
build: generate ## Build the operator and the CLI into bin/.
	go build -o $(BIN)/anvil-operator ./cmd/anvil-operator
	go build -o $(BIN)/anvil ./cmd/anvil

# Where `make image` writes the OCI layout, and for which platforms
# (comma-separated os/arch; empty means the host's). SOURCE_DATE_EPOCH, when
# set, dates the image; otherwise it is dated at the Unix epoch.
IMAGE_OUTPUT ?= $(BIN)/image/anvil-operator
IMAGE_PLATFORMS ?=
# The image is built, and its layer compressed, by exactly the Go that
# go.mod's toolchain line names, fetched from the module proxy when the
# machine has another: two Go releases give two digests.
IMAGE_GO := GOTOOLCHAIN=$(shell sed -n 's/^toolchain //p' go.mod) go

.PHONY: pin-image
pin-image: ## Build the host's image and pin its digest as the operator chart's default image.digest.
	digest="$$($(IMAGE_GO) run ./internal/dev/cmd/anvil-image --output $(IMAGE_OUTPUT) | tail -n1)"; \
		[[ "$$digest" == sha256:* ]] || { echo "anvil-image printed no digest" >&2; exit 1; }; \
		sed -i -E "s/^(  digest: )\"sha256:[0-9a-f]{64}\"/\1\"$$digest\"/" charts/anvil-operator/values.yaml; \
		grep -q "$$digest" charts/anvil-operator/values.yaml && echo "pinned $$digest"

.PHONY: image
image: ## Build the operator's OCI image without Docker into $(IMAGE_OUTPUT) and print its digest (IMAGE_PLATFORMS=linux/amd64,linux/arm64 for an index).
	$(IMAGE_GO) run ./internal/dev/cmd/anvil-image --output $(IMAGE_OUTPUT) $(if $(IMAGE_PLATFORMS),--platforms $(IMAGE_PLATFORMS))

##@ Test

.PHONY: test
test: ## The gate CI runs, from scratch: tools (packages and services beside), verify, gofmt and vet, unit and integration tests without the long suites; prints each phase's time.
	hack/make-test.sh gate

.PHONY: test-all
test-all: ## Everything: make test with the long suites (chaos, round trips, benchmarks' test forms), the e2e checks of the devstack and the guide, and golangci-lint.
	hack/make-test.sh all

# test/monitoring is a Go module of its own: its tests parse and evaluate
# the chart's alerts with the Prometheus module, which stays out of Anvil's
# go.mod (docs/design/monitoring.md). ./... does not reach into it, so the
# test targets run it too.
MONITORING_MODULE := test/monitoring

.PHONY: test-unit
test-unit: ## Unit tests: pure functions, no processes.
	go test -short -count=1 -ldflags='$(TEST_LDFLAGS)' ./...
	cd $(MONITORING_MODULE) && go test -short -count=1 -ldflags='$(TEST_LDFLAGS)' ./...

.PHONY: test-monitoring
test-monitoring: ## The chart's alerts and dashboard against the metrics the operator exports (module test/monitoring).
	cd $(MONITORING_MODULE) && go test -count=1 -ldflags='$(TEST_LDFLAGS)' ./...

.PHONY: test-integration
test-integration: tools-test deps ## Integration tests on real kube-apiservers and real oslo.config.
	go test -count=1 -ldflags='$(TEST_LDFLAGS)' -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -run 'Integration' $(INTEGRATION_FIRST) ./...

# make test runs both kinds in one go test, so each test binary is built
# and linked once rather than once per kind: on two cores that second round
# alone takes about two minutes. go test's own vet, a small set of govet's
# analyzers, is make test's lint; make test-all turns it off, since its
# golangci-lint runs govet with every analyzer and more.
TEST_VET ?=
.PHONY: test-go
# The monitoring module's tests build and run beside the main module's,
# which mostly wait on apiservers: its compile (about a minute and a half
# of CPU from an empty cache) then fills idle cores instead of adding to
# the wall time. Both run to the end; either failing fails the target.
test-go: tools-test deps ## Unit and integration tests in one go test run, as make test-all runs them (ANVIL_SKIP_LONG_SUITES=1: as make test does).
	(cd $(MONITORING_MODULE) && go test -count=1 $(TEST_VET) -ldflags='$(TEST_LDFLAGS)' ./...) & monitoring=$$!; \
	rc=0; go test -count=1 $(TEST_VET) -ldflags='$(TEST_LDFLAGS)' -p $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $(INTEGRATION_FIRST) ./... || rc=$$?; \
	wait $$monitoring || rc=1; exit $$rc

# The image's reproducibility at full strength: the pin test's second
# `make image` runs with an empty GOCACHE too, compiling the operator anew
# (minutes on two cores). `make test` runs it with a shared build cache.
.PHONY: test-image
test-image: ## Build the image twice, the second time at another path with an empty GOPATH and GOCACHE, and compare both digests with the chart's pin.
	ANVIL_IMAGE_EMPTY_GOCACHE=1 go test -count=1 -timeout 30m -v -run 'IntegrationChartPinsThisCommitsImage' ./internal/dev/ociimage/

.PHONY: test-e2e
test-e2e: tools-kube ## End-to-end: the devstack, and the guide "Connect a compute cluster" on the same devstack.
	E2E_DEVSTACK_THEN=test/e2e/guide.sh test/e2e/devstack.sh

# The survival suite of test/chaos at full length: 50 kills of the
# operator process during pool churn and rotations, and the dead-cluster
# isolation measured over 25 samples a phase. `make test-all` runs the
# same tests shorter (1 kill, 18 samples) with the other integration
# packages, which share the cores, so only there the isolation bound is
# 2.0 rather than the target 1.2; `make test` leaves them out. CHAOS_SEED
# replays the actions and kill delays of a run whose log printed it.
CHAOS_KILLS ?= 50
CHAOS_SAMPLES ?= 25
CHAOS_MAX_RATIO ?= 1.2
CHAOS_SEED ?=

.PHONY: test-chaos
test-chaos: tools-test deps ## The survival suite: 50 kill -9 of the operator amid churn, and a dead compute cluster (CHAOS_SEED=n replays a run).
	ANVIL_CHAOS_KILLS=$(CHAOS_KILLS) ANVIL_CHAOS_SAMPLES=$(CHAOS_SAMPLES) ANVIL_CHAOS_MAX_RATIO=$(CHAOS_MAX_RATIO) ANVIL_CHAOS_SEED=$(CHAOS_SEED) \
		go test -count=1 -p 1 -timeout 120m -v -run 'IntegrationChaos' ./test/chaos/

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME each (default 10m); their seed corpora already run in test-unit.
	hack/fuzz.sh $(FUZZTIME)

# What `make bench` measures and how often; see internal/dev/cmd/anvil-bench.
BENCH_ARGS ?= --clusters 1,4,16 --samples 20 --only P1,P2,P3,P4

.PHONY: bench
bench: tools-kube ## Measure Anvil on real apiservers and print ratios against same-run baselines; see docs/reference/performance.md.
	go run ./internal/dev/cmd/anvil-bench $(BENCH_ARGS)

.PHONY: devstack-probe
devstack-probe: ## On a running devstack: time a ControlPlane spec change until compute-a's mirror has it, against a direct Secret write (PROBE_ARGS).
	go run ./internal/dev/perf/cmd/anvil-probe $(PROBE_ARGS)

##@ OpenStack services (Keystone, Placement, Nova, a bus and a database on 127.0.0.1)

.PHONY: openstack-up openstack-down
openstack-up: ## Install (if needed) and start the local OpenStack services; see docs/reference/test-infrastructure.md.
	hack/openstack/openstack.sh install
	hack/openstack/openstack.sh start

openstack-down: ## Stop the local OpenStack services.
	hack/openstack/openstack.sh stop

##@ Devstack

.PHONY: devstack
devstack: tools-kube ## Start the local devstack: a management cluster, compute clusters and the operator.
	go run ./internal/dev/cmd/anvil-dev devstack up $(DEVSTACK_ARGS)

.PHONY: devstack-down
devstack-down: ## Stop everything the devstack started and remove its state.
	go run ./internal/dev/cmd/anvil-dev devstack down

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*?##/ { printf "  %-18s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)
