# proxmoxtalos build. `make demo` and `make test` are the two commands a newcomer needs;
# docs/building.md explains every target.
#
# Everything this file installs lands in ignored folders of the repository:
#   .tools/bin   Pulumi CLI + YAML language host (built from tools/go.mod), talosctl
#                (built from tools/talosctl/go.mod), and the lab's kube-apiserver and etcd
#                (built from tools/kube/go.mod)
#   bin/         the provider plugin binary
#   .cache/      npm, pip, Maven and Pulumi caches, the demo's state
# Go's own module and build caches stay where `go env` puts them.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT      := $(CURDIR)
VERSION   := $(shell cat VERSION)
TOOLS_BIN := $(ROOT)/.tools/bin
CACHE     := $(ROOT)/.cache
PULUMI    := $(TOOLS_BIN)/pulumi
YAMLHOST  := $(TOOLS_BIN)/pulumi-language-yaml
TALOSCTL  := $(TOOLS_BIN)/talosctl
GOLANGCI_LINT := $(TOOLS_BIN)/golangci-lint
PROVIDER  := $(ROOT)/bin/pulumi-resource-proxmoxtalos
SCHEMA    := schema/schema.json

# Tool versions come from tools/go.mod, so bumping a tool is a one-line change there.
PULUMI_VERSION := $(shell awk '$$1=="github.com/pulumi/pulumi/pkg/v3"{print $$2}' tools/go.mod)
YAML_VERSION   := $(shell awk '$$1=="github.com/pulumi/pulumi-yaml"{print $$2}' tools/go.mod)
# The lab's real kube-apiserver and etcd (tools/kube/go.mod); the binaries carry their versions
# in their names, which is how the lab (tests/lab/talos/kubebin.go) finds them.
KUBE_VERSION   := $(shell awk '$$1=="k8s.io/kubernetes"{print $$2}' tools/kube/go.mod)
ETCD_VERSION   := $(shell awk '$$1=="go.etcd.io/etcd/server/v3"{print $$2}' tools/kube/go.mod)
KUBE_APISERVER := $(TOOLS_BIN)/kube-apiserver-$(KUBE_VERSION)
ETCD           := $(TOOLS_BIN)/etcd-$(ETCD_VERSION)
# The main packages of the tools (their builds below, and prefetch-modules).
PULUMI_PKG         := github.com/pulumi/pulumi/pkg/v3/cmd/pulumi
YAMLHOST_PKG       := github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml
KUBE_APISERVER_PKG := k8s.io/kubernetes/cmd/kube-apiserver
ETCD_PKG           := go.etcd.io/etcd/server/v3
GOLANGCI_LINT_PKG  := github.com/golangci/golangci-lint/v2/cmd/golangci-lint
TALOS_VERSION  := $(shell awk '{for (i = 1; i < NF; i++) if ($$i == "github.com/siderolabs/talos" && $$(i+1) ~ /^v[0-9]/) print $$(i+1)}' tools/talosctl/go.mod)

# -timeout only guards against a hung test binary (CI allows 90 min in all); no test has a wall-clock limit.
# One set of build settings for every Go build and test the Makefile runs, so that they share
# one build cache: pure Go (release binaries need no particular libc, as Pulumi's own providers
# build them with CGO_ENABLED=0) and -trimpath (no local paths in release binaries; and a
# package compiles to the same cache entry from the checkout or from a module cache, which
# keeps the go install test in tests/e2e to a link).
export CGO_ENABLED := 0
export GOFLAGS     := $(strip $(shell go env GOFLAGS) -trimpath)

GO_TEST_FLAGS ?= -count=1 -timeout 60m
# How many tests/e2e tests run at once (go test -parallel; Go's default is the number of cores,
# 2 here). The e2e tests mostly wait (on the lab's real etcd and kube-apiserver, on the provider's
# timeouts for nodes that do not answer, on downloads), so two at a time left a core idle for the
# last minutes of make test, when only tests/e2e still ran; docs/building.md has the measurements.
E2E_PARALLEL ?= 4
export PATH := $(TOOLS_BIN):$(PATH)

# Caches for the language toolchains, kept inside the (ignored) repository folder so that a
# clean clone installs everything from the project's own pinned files.
export npm_config_cache := $(CACHE)/npm
export PIP_CACHE_DIR    := $(CACHE)/pip
MVN := mvn -B -q -Dmaven.repo.local=$(CACHE)/m2

.PHONY: help
help:
	@echo "make demo             build, start the lab, pulumi up a 3+2 TalosCluster, list its nodes, destroy, stop the lab"
	@echo "make test             everything CI runs (tools, provider, check-generated, go test, SDK builds)"
	@echo "make tools            Pulumi CLI $(PULUMI_VERSION) + YAML host $(YAML_VERSION) + talosctl $(TALOS_VERSION) + kube-tools into .tools/bin"
	@echo "make kube-tools       the lab's kube-apiserver $(KUBE_VERSION) and etcd $(ETCD_VERSION) into .tools/bin"
	@echo "make kube-controllers kube-controller-manager and kube-scheduler $(KUBE_VERSION) into .tools/bin (not used by the lab yet)"
	@echo "make provider         bin/pulumi-resource-proxmoxtalos (version $(VERSION))"
	@echo "make schema           schema/schema.json from the provider"
	@echo "make sdks             sdk/{go,nodejs,python,java} from the schema"
	@echo "make check-generated  fail if the committed schema/SDKs differ from a fresh generation"
	@echo "make lint             golangci-lint (pinned in tools/lint, linters in .golangci.yml) over the root module, tests/e2e, examples/go* and gen/javagen (part of make test)"
	@echo "make tidy             go mod tidy in the root module and in tests/e2e (after a dependency bump)"
	@echo "make dist             release artifacts into dist/ (plugin archives for 6 platforms, npm, wheel, sdist, jars), checked against VERSION"
	@echo "make bench            benchmarks against the lab (BENCH_FLAGS=...): table on stdout, docs/benchmarks.md"
	@echo "make lab              run the Proxmox VE + Talos lab in the foreground"
	@echo "make soak             the fault campaign: seeded 3+2 runs under each fault kind, table at the end"
	@echo "make lab-schema       tests/lab/pveapi/schema.json from ../shared/pve-api (PVE_APIDATA=...)"

# ---------------------------------------------------------------------------------------------
# Tools: built only when missing or when tools/go.mod changed.

.PHONY: tools
tools: $(PULUMI) $(YAMLHOST) $(TALOSCTL) kube-tools

# -s -w (no symbol table, no DWARF; Pulumi's own release builds strip them too, stack traces
# keep working): the link is about half the CPU (CLI 9.4 -> 5.2 s, YAML host 3.4 -> 2.5 s,
# measured 2026-11-29) and the binaries a third smaller (170 -> 122 MB).
$(PULUMI): tools/go.mod tools/go.sum
	@echo "building Pulumi CLI $(PULUMI_VERSION) (several minutes the first time)"
	cd tools && go build -o $@ \
		-ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$(PULUMI_VERSION)" \
		$(PULUMI_PKG)

$(YAMLHOST): tools/go.mod tools/go.sum
	@echo "building pulumi-language-yaml $(YAML_VERSION)"
	cd tools && go build -o $@ \
		-ldflags "-s -w -X github.com/pulumi/pulumi-yaml/pkg/version.Version=$(YAML_VERSION)" \
		$(YAMLHOST_PKG)

# golangci-lint, pinned in its own module (tools/lint) so that the linters' dependencies never
# move the provider's. Built once into .tools/bin like the other tools (again only when
# tools/lint/go.mod or go.sum change); docs/building.md has its build and run times.
$(GOLANGCI_LINT): tools/lint/go.mod tools/lint/go.sum
	@echo "building golangci-lint (a few minutes the first time)"
	cd tools/lint && go build -o $@ $(GOLANGCI_LINT_PKG)

# The root module, then each Go module of our own beside it (generated sdk/ and the tool pins in
# tools/ excepted), with the same .golangci.yml.
LINT_MODULES := tests/e2e examples/go examples/go-resources examples/go-composition gen/javagen

# --allow-serial-runners: golangci-lint holds a machine-wide lock file in the temp folder and by
# default fails at once ("parallel golangci-lint is running") when another checkout lints at the
# same time; waiting for it instead keeps `make test` from failing on a shared machine.
LINT_RUN := $(GOLANGCI_LINT) run --allow-serial-runners

.PHONY: lint
lint: $(GOLANGCI_LINT)
	$(LINT_RUN) ./...
	@for m in $(LINT_MODULES); do echo "golangci-lint in $$m"; (cd $$m && $(LINT_RUN) --config $(ROOT)/.golangci.yml ./...) || exit 1; done

# talosctl, the real Talos client, for the tests that run it against the lab's nodes and for
# `make demo`. Built as upstream builds it (CGO off, tag grpcnotrace, -s -w); its version is
# the one compiled into machinery's gendata, so no ldflags are needed.
# tools/talosctl/source.sh lays out talos's source in .tools/talos-src (go.mod replaces the
# module with it) and explains the one build fix it applies.
$(TALOSCTL): tools/talosctl/go.mod tools/talosctl/go.sum tools/talosctl/source.sh
	@echo "building talosctl $(TALOS_VERSION) (several minutes the first time)"
	cd tools/talosctl && ./source.sh $(TALOS_VERSION) $(ROOT)/.tools/talos-src && \
		CGO_ENABLED=0 go build -tags grpcnotrace -ldflags "-s -w" -o $@ github.com/siderolabs/talos/cmd/talosctl

# The lab's Kubernetes control plane: the real kube-apiserver (k8s.io/kubernetes, its staging
# modules mapped to their v0.x releases in tools/kube/go.mod) with its version set as the
# Kubernetes release build sets it, and the real etcd server.
.PHONY: kube-tools
kube-tools: $(KUBE_APISERVER) $(ETCD)

$(KUBE_APISERVER): tools/kube/go.mod tools/kube/go.sum
	@echo "building kube-apiserver $(KUBE_VERSION) for the lab (a few minutes the first time)"
	cd tools/kube && go build -o $@ -ldflags "-s -w \
		-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
		-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))) \
		-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
		-X k8s.io/component-base/version.gitTreeState=clean \
		-X k8s.io/component-base/version.buildDate=$$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
		$(KUBE_APISERVER_PKG)

$(ETCD): tools/kube/go.mod tools/kube/go.sum
	@echo "building etcd $(ETCD_VERSION) for the lab"
	cd tools/kube && go build -o $@ -ldflags "-s -w" $(ETCD_PKG)

# The real kube-controller-manager and kube-scheduler at the apiserver's version (issue 12: they
# would replace the lab's hand-written workload controllers and scheduler, which the lab does not
# do yet). Not part of kube-tools or make test. Extra cold build on top of kube-apiserver's
# packages (warm module cache; measured 2026-11-28 with /usr/bin/time at load 7-12):
# kube-controller-manager 78 s user + 21 s sys (374 packages kube-apiserver does not build),
# then kube-scheduler 4.5 s user + 1.2 s sys (6 more packages).
KUBE_CONTROLLERS := $(TOOLS_BIN)/kube-controller-manager-$(KUBE_VERSION) $(TOOLS_BIN)/kube-scheduler-$(KUBE_VERSION)

.PHONY: kube-controllers
kube-controllers: $(KUBE_CONTROLLERS)

$(KUBE_CONTROLLERS): $(TOOLS_BIN)/%-$(KUBE_VERSION): tools/kube/go.mod tools/kube/go.sum
	@echo "building $* $(KUBE_VERSION)"
	cd tools/kube && go build -o $@ -ldflags "-s -w \
		-X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
		-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(patsubst v%,%,$(KUBE_VERSION)))) \
		-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(KUBE_VERSION))) \
		-X k8s.io/component-base/version.gitTreeState=clean" \
		k8s.io/kubernetes/cmd/$*

# ---------------------------------------------------------------------------------------------
# Provider, schema, SDKs.

PULUMI_GO_SDK := $(shell awk '$$1=="github.com/pulumi/pulumi/sdk/v3"{print $$2}' go.mod)

.PHONY: provider
provider: # Go's build cache makes a rebuild without changes a no-op
	go build -o $(PROVIDER) \
		-ldflags "-X github.com/proxmoxtalos/proxmoxtalos/provider/version.Version=$(VERSION)" \
		./provider/cmd/pulumi-resource-proxmoxtalos

.PHONY: schema
schema:
	@mkdir -p schema
	go run ./provider/cmd/schemagen -version $(VERSION) -out $(SCHEMA)

.PHONY: sdks
sdks: schema
	@if [ ! -f $(SCHEMA) ]; then \
		echo "sdks: no $(SCHEMA) (the provider registers nothing yet): removing generated SDKs"; \
		rm -rf sdk/go sdk/go.mod sdk/go.sum sdk/nodejs sdk/python sdk/java; \
	else \
		$(MAKE) --no-print-directory generate-sdks; \
	fi

.PHONY: generate-sdks
generate-sdks:
	go run ./gen/sdkgen -schema $(SCHEMA) -out sdk -pulumi-go-sdk $(PULUMI_GO_SDK)
	cd sdk && go mod tidy
	cd gen/javagen && go run . -schema ../../$(SCHEMA) -out ../../sdk/java
	@# package-lock.json is not generated: npm keeps it in step with package.json (pinned installs).
	cd sdk/nodejs && npm install --package-lock-only --ignore-scripts --no-audit --no-fund --loglevel=error

# Fails when the committed schema or SDKs are not what the generators produce now.
.PHONY: check-generated
check-generated: sdks
	@changed=$$(git status --porcelain -- schema sdk); \
	if [ -n "$$changed" ]; then \
		echo "check-generated: the committed schema/SDKs differ from the generators' output:"; \
		echo "$$changed"; git --no-pager diff --stat -- schema sdk; \
		echo "run 'make schema sdks' and commit the result (commit message: Regenerate schema and SDKs)"; \
		exit 1; \
	fi
	@echo "check-generated: schema and SDKs are up to date"

# ---------------------------------------------------------------------------------------------
# Tests.

# make test: the phases of before (tools, provider, check-generated, check-lab-schema, lint,
# go-test, sdk-checks, dist-check), but not one after another where nothing needs that:
# - while the tools build, prefetch-modules downloads the modules of the later builds; it runs
#   in a session and process group of its own (setsid), so that when a first phase fails or
#   make test is interrupted, make test stops the whole group (the sub-make and every go list
#   it started) and waits for it: nothing of it outlives make test;
# - go-vet (which also compiles every package for the tests, with all cores) runs before the
#   tests; then the tests (go-test-run: the root module and tests/e2e) run, and beside them,
#   one after another at nice $(TEST_SIDE_NICE) (the tests keep their CPU; the side phases take
#   what tests/e2e leaves while it waits on the lab): javagen-test, lint (with golangci-lint's
#   first build) and the Go, Node.js and Python SDK checks. Each writes .cache/test-<phase>.log,
#   printed after the tests' output; a failing one is announced at once, and the tests and the
#   side phases after it go on;
# - then the Java SDK check (it installs the SDK into .cache/m2, where tests/e2e's Java example
#   installs and resolves it too) and dist-check (it reads what the SDK checks put in dist/).
# make test fails naming every phase that failed. Measured: docs/building.md "make test's phases".
TEST_SIDE_NO_SDK := javagen-test lint
TEST_SIDE        := $(TEST_SIDE_NO_SDK) go-sdk-check nodejs-sdk-check python-sdk-check
TEST_SIDE_NICE   ?= 10

.PHONY: test
test:
	@mkdir -p $(CACHE); rm -f $(CACHE)/test-*.log $(CACHE)/test-side.failed
	@echo "make test: started ($$(date -u +%T)); modules for the later builds download meanwhile (.cache/test-prefetch.log)"; \
	setsid $(MAKE) --no-print-directory prefetch-modules > $(CACHE)/test-prefetch.log 2>&1 & prefetch=$$!; \
	stop_prefetch() { \
		kill -TERM -- -$$prefetch 2>/dev/null || true; wait $$prefetch 2>/dev/null || true; \
		for i in $$(seq 50); do kill -0 -- -$$prefetch 2>/dev/null || return 0; sleep 0.2; done; \
		kill -KILL -- -$$prefetch 2>/dev/null || true; \
	}; \
	trap stop_prefetch EXIT; \
	status=0; $(MAKE) --no-print-directory tools provider check-generated check-lab-schema go-vet || status=$$?; \
	if [ $$status -ne 0 ]; then exit $$status; fi; \
	wait $$prefetch || true; trap - EXIT; \
	echo "make test: tools, provider, check-generated, check-lab-schema, go-vet done ($$(date -u +%T))"
	@rm -rf $(DIST)
	@if [ -f $(SCHEMA) ]; then side="$(TEST_SIDE)"; else side="$(TEST_SIDE_NO_SDK)"; fi; \
	echo "make test: the tests now ($$(date -u +%T)); $$side beside them (nice $(TEST_SIDE_NICE), output after theirs)"; \
	( sidefailed=0; for p in $$side; do \
		t0=$$(date +%s); echo "make test: $$p started beside the tests ($$(date -u +%T))" > $(CACHE)/test-$$p.log; \
		if ! nice -n $(TEST_SIDE_NICE) $(MAKE) --no-print-directory $$p >> $(CACHE)/test-$$p.log 2>&1; then \
			echo "$$p" >> $(CACHE)/test-side.failed; sidefailed=1; \
			echo "make test: $$p FAILED (log: .cache/test-$$p.log, shown after the tests); the tests and the other side phases go on"; \
			continue; \
		fi; \
		echo "make test: $$p done in $$(( $$(date +%s) - t0 )) s ($$(date -u +%T))" >> $(CACHE)/test-$$p.log; \
	done; exit $$sidefailed ) & sidepid=$$!; \
	t0=$$(date +%s); gotest=0; $(MAKE) --no-print-directory go-test-run || gotest=$$?; \
	echo "make test: the tests ended in $$(( $$(date +%s) - t0 )) s ($$(date -u +%T)), exit $$gotest"; \
	sidestatus=0; wait $$sidepid || sidestatus=$$?; \
	for p in $$side; do \
		if [ -f $(CACHE)/test-$$p.log ]; then echo "--- $$p (ran beside the tests, .cache/test-$$p.log):"; cat $(CACHE)/test-$$p.log; fi; \
	done; \
	echo "make test: side phases over ($$(date -u +%T))"; \
	failed=""; [ $$gotest -eq 0 ] || failed="go-test-run"; \
	if [ $$sidestatus -ne 0 ]; then failed="$$failed $$(paste -sd ' ' $(CACHE)/test-side.failed 2>/dev/null || echo "a side phase ($$side)")"; fi; \
	if [ -n "$$failed" ]; then echo "make test: FAILED: $${failed# } (the Java SDK check and dist-check did not run)"; exit 1; fi
	@for p in $$(if [ -f $(SCHEMA) ]; then echo java-sdk-check; fi) dist-check; do \
		$(MAKE) --no-print-directory $$p || { echo "make test: FAILED: $$p"; exit 1; }; \
	done
	@echo "make test: all phases passed ($$(date -u +%T))"

# The modules every Go build of make test needs, fetched ahead of the builds (make test runs this
# in the background while it builds the tools; not niced: unpacking them is CPU the builds would
# spend anyway, only later). With an empty module cache each go build
# first waits for its modules, CPU idle, before it compiles anything (go list -deps, empty cache,
# 2026-11-29 at load 10: tools/ 79 s, tools/kube 32 s, tools/lint 15 s, the root module 11 s).
# In build order, so that the downloads run ahead of the compiles; go locks each module in the
# cache, so a build never fetches one twice. Best effort: errors only in .cache/test-prefetch.log,
# the builds fetch whatever is missing and fail properly. talosctl's modules are not in it: its
# go.mod replaces talos with the source tree its build lays out first.
.PHONY: prefetch-modules
prefetch-modules:
	-cd tools && go list -e -deps $(PULUMI_PKG) $(YAMLHOST_PKG) > /dev/null
	-cd tools/kube && go list -e -deps $(KUBE_APISERVER_PKG) $(ETCD_PKG) > /dev/null
	-go list -e -deps -test ./... > /dev/null
	-cd gen/javagen && go list -e -deps -test ./... > /dev/null
	-cd tests/e2e && go list -e -deps -test ./... > /dev/null
	-cd tools/lint && go list -e -deps $(GOLANGCI_LINT_PKG) > /dev/null
	-cd sdk && go list -e -deps ./... > /dev/null

# go-test is go-vet, javagen-test and go-test-run; make test runs javagen-test beside the tests.
.PHONY: go-test
go-test: go-vet javagen-test go-test-run

# go vet also compiles every package and its test variant, with all cores, into the build cache,
# where the tests (one package at a time) and golangci-lint then find them.
.PHONY: go-vet
go-vet:
	go vet ./...
	cd tests/e2e && go vet ./...

.PHONY: javagen-test
javagen-test:
	cd gen/javagen && go vet ./... && go test ./...

.PHONY: go-test-run
go-test-run: tools provider
	@# tests/e2e is a module of its own (it needs replace directives the root module, which
	@# `go install ...@vX` builds, must not have). Its tests run beside the root module's, one
	@# package at a time each, as the single `go test -p 2 ./...` ran them before; the root
	@# module's output is printed after the e2e tests' so the two do not interleave.
	@mkdir -p $(CACHE); export PROXMOXTALOS_PROVIDER_BIN=$(PROVIDER); \
	echo "go test ./... (root module, output below when done) and tests/e2e ./... (streamed)"; \
	go test $(GO_TEST_FLAGS) -p 1 ./... > $(CACHE)/go-test-root.log 2>&1 & pid=$$!; \
	e2e=0; (cd tests/e2e && go test $(GO_TEST_FLAGS) -p 1 -parallel $(E2E_PARALLEL) ./...) || e2e=$$?; \
	root=0; wait $$pid || root=$$?; \
	echo "--- root module:"; cat $(CACHE)/go-test-root.log; \
	if [ $$root -ne 0 ] || [ $$e2e -ne 0 ]; then echo "go-test: root module exit $$root, tests/e2e exit $$e2e"; exit 1; fi

# Benchmarks (tests/bench): creates at the lab's time scale 1 against its critical path,
# Proxmox requests and task polls as the lab counted them, previews, cold start, memory; min
# and median over BENCH_FLAGS' -runs, with the load average. Writes docs/benchmarks.md.
# `make test` runs it once at tiny scale (TestBenchTinyScale) only to keep it working.
# Example: make bench BENCH_FLAGS='-runs 1 -clusters 3+2 -previews 6,60 -large ""'
BENCH_FLAGS ?=
.PHONY: bench
bench: $(PULUMI) $(YAMLHOST) provider
	@mkdir -p $(CACHE)/bench
	go build -o $(CACHE)/bench/bench ./tests/bench
	PROXMOXTALOS_PROVIDER_BIN=$(PROVIDER) $(CACHE)/bench/bench $(BENCH_FLAGS)

# The fault campaign of issue 10 (tests/e2e/soak_test.go): 20 seeded runs per fault kind and
# rate (5 % and 15 %), each a 3+2 TalosCluster through create, scale-out, Talos upgrade and
# destroy, and the kill runs (the provider or the CLI killed in every step, at each kill point once per target);
# prints the table (also written to .cache/soak-table.md). Not part of `make test`, which runs
# one run of 500s and one kill run. SOAK_RUNS, SOAK_SEEDS (e.g. 9103,9112: repeat chosen runs),
# SOAK_RATES (0.05,0.15), SOAK_PARALLEL and SOAK_KINDS
# (500,task,lock-timeout,scripted,kill) narrow it. SOAK_TIMEOUT bounds the whole campaign (a run
# that hangs then ends it with the stacks of every goroutine in .cache/soak.log instead of
# waiting forever; the runs finished so far are logged there).
SOAK_TIMEOUT ?= 10h
.PHONY: soak
soak: tools provider
	@mkdir -p $(CACHE)
	cd tests/e2e && PROXMOXTALOS_SOAK=full PROXMOXTALOS_PROVIDER_BIN=$(PROVIDER) SOAK_TABLE=$(CACHE)/soak-table.md \
		go test -count=1 -timeout $(SOAK_TIMEOUT) -run '^TestSoak$$' -v . > $(CACHE)/soak.log 2>&1 || status=$$?; \
		grep -E '^\s+soak_test.go:[0-9]+: [a-z-]+ at ' $(CACHE)/soak.log || true; \
		cat $(CACHE)/soak-table.md 2>/dev/null; grep -E 'goal not met' $(CACHE)/soak.log || true; exit $${status:-0}

# After a change of go.mod (a dependency bump), the tests module follows the root module.
.PHONY: tidy
tidy:
	go mod tidy
	cd tests/e2e && go mod tidy

.PHONY: sdk-checks
sdk-checks:
	rm -rf $(DIST) # the SDK checks build the packages they install into dist/
	@if [ -f $(SCHEMA) ]; then \
		$(MAKE) --no-print-directory go-sdk-check nodejs-sdk-check python-sdk-check java-sdk-check; \
	else \
		echo "sdk-checks: no schema yet (the provider registers nothing): no SDK to build"; \
	fi

# The Go SDK is its own module: it must build and vet on its own, without the provider.
.PHONY: go-sdk-check
go-sdk-check:
	cd sdk && go vet ./... && echo "go SDK: builds as its own module"
	@# The schema's Go examples (provider/docs/examples, //go:build ignore so that the root module and its go mod tidy skip them; named files are built anyway)
	@# against the SDK module alone, as a user's program would be.
	cd sdk && for f in ../provider/docs/examples/*/main.go; do go vet $$f || exit 1; done
	@echo "go SDK: the schema's Go examples compile"

# The SDK's pinned TypeScript compiler, strict, type-checking only.
TSC = $(ROOT)/sdk/nodejs/node_modules/.bin/tsc --strict --noEmit --skipLibCheck --module nodenext --moduleResolution nodenext --target ES2022

# The npm tarball a user gets (dist-nodejs: tsc with the SDK's pinned toolchain, npm pack),
# installed into an empty project, loaded and type-checked against.
.PHONY: nodejs-sdk-check
nodejs-sdk-check:
	$(MAKE) --no-print-directory dist-nodejs
	rm -rf $(CACHE)/npm-consumer && mkdir -p $(CACHE)/npm-consumer
	cd $(CACHE)/npm-consumer && echo '{"name":"consumer","private":true}' > package.json && \
		npm install --no-audit --no-fund --prefer-offline --loglevel=error $(DIST)/$(NPM_TGZ) \
			@pulumi/pulumi@$$(node -p 'require("$(ROOT)/sdk/nodejs/package-lock.json").packages["node_modules/@pulumi/pulumi"].version') && \
		node -e 'const p = require("@proxmoxtalos/proxmoxtalos"); if (typeof p.Provider !== "function") { throw new Error("no Provider class in the packed SDK"); } console.log("nodejs SDK: npm pack installs and loads")'
	@# The types are real: typed usage (ts_*_usage.ts) passes tsc --strict, each misuse
	@# (ts_*_misuse.ts, one mistake per file) must fail it.
	cp tests/sdks/ts_*.ts $(CACHE)/npm-consumer/
	cd $(CACHE)/npm-consumer && $(TSC) $$(cd $(ROOT)/tests/sdks && ls ts_*_usage.ts)
	@# The package README's example (provider/sdk_readmes.go) compiles too.
	sed -n '/^```typescript$$/,/^```$$/{/^```/d;p}' sdk/nodejs/README.md > $(CACHE)/npm-consumer/readme_example.ts
	@test -s $(CACHE)/npm-consumer/readme_example.ts || { echo "nodejs SDK: no typescript example in sdk/nodejs/README.md"; exit 1; }
	cd $(CACHE)/npm-consumer && $(TSC) readme_example.ts
	@# So do the schema's examples (provider/docs/examples), which the Registry and the SDK show.
	for d in provider/docs/examples/*/; do cp $$d/index.ts $(CACHE)/npm-consumer/example_$$(basename $$d).ts; done
	cd $(CACHE)/npm-consumer && $(TSC) example_*.ts
	@for f in $$(cd tests/sdks && ls ts_*_misuse.ts); do \
		if (cd $(CACHE)/npm-consumer && $(TSC) $$f >/dev/null); then \
			echo "nodejs SDK: tsc accepted tests/sdks/$$f: the SDK's types are not checked"; exit 1; \
		fi; \
	done
	@echo "nodejs SDK: types checked with tsc --strict"

# The wheel a user gets (dist-python), installed into a fresh virtualenv with pinned
# dependencies (tests/sdks/python-constraints.txt, also applied to the isolated build environment).
.PHONY: python-sdk-check
python-sdk-check: export PIP_CONSTRAINT := $(ROOT)/tests/sdks/python-constraints.txt
python-sdk-check:
	$(MAKE) --no-print-directory dist-python
	rm -rf $(CACHE)/py-venv
	python3 -m venv $(CACHE)/py-venv
	$(CACHE)/py-venv/bin/pip install --quiet --disable-pip-version-check $(DIST)/$(WHEEL)
	cd $(CACHE) && py-venv/bin/python -c 'import pulumi_proxmoxtalos as p, importlib.resources as r; \
		assert r.files(p).joinpath("py.typed").is_file(), "py.typed missing from the wheel"; \
		print("python SDK: wheel installs and imports,", p.__name__)'
	@# The hints are real: typed usage (python_*_usage.py) passes mypy --strict, each misuse
	@# (python_*_misuse.py, one mistake per file) must fail it.
	$(CACHE)/py-venv/bin/pip install --quiet --disable-pip-version-check mypy
	cd tests/sdks && $(CACHE)/py-venv/bin/mypy --strict --cache-dir $(CACHE)/mypy python_*_usage.py
	@# The package README's example (provider/sdk_readmes.go) passes mypy --strict too.
	sed -n '/^```python$$/,/^```$$/{/^```/d;p}' sdk/python/README.md > $(CACHE)/readme_example.py
	@test -s $(CACHE)/readme_example.py || { echo "python SDK: no python example in sdk/python/README.md"; exit 1; }
	cd $(CACHE) && py-venv/bin/mypy --strict --cache-dir $(CACHE)/mypy readme_example.py
	@# So do the schema's examples (provider/docs/examples).
	rm -rf $(CACHE)/py-examples && mkdir -p $(CACHE)/py-examples
	for d in provider/docs/examples/*/; do cp $$d/__main__.py $(CACHE)/py-examples/example_$$(basename $$d | tr - _).py; done
	cd $(CACHE)/py-examples && ../py-venv/bin/mypy --strict --cache-dir $(CACHE)/mypy example_*.py
	@for f in $$(cd tests/sdks && ls python_*_misuse.py); do \
		if (cd tests/sdks && $(CACHE)/py-venv/bin/mypy --strict --cache-dir $(CACHE)/mypy $$f >/dev/null); then \
			echo "python SDK: mypy accepted tests/sdks/$$f: the SDK's type hints are not checked"; exit 1; \
		fi; \
	done
	@echo "python SDK: type hints checked with mypy"

# The jar a user gets (dist-java: sdk/java built with Maven against com.pulumi:pulumi from Maven
# Central, installed into .cache/m2), then tests/sdks/java against that jar under the Java SDK's
# mocks: the component's secret outputs are secret in Java too. Offline once the dependencies
# of both pom.xml files have been fetched into .cache/m2.
MVN_STAMP   = $(CACHE)/m2/.resolved-$$(cat $(ROOT)/sdk/java/pom.xml $(ROOT)/tests/sdks/java/pom.xml | sha256sum | cut -c1-16)
MVN_OFFLINE = $$(test -f $(MVN_STAMP) && echo -o)

.PHONY: java-sdk-check
java-sdk-check:
	$(MAKE) --no-print-directory dist-java
	@# The consumer resolves the jar and POM of dist/, as a user's build resolves them from a
	@# repository, not sdk/java's build output: they replace what dist-java installed. The
	@# install plugin is the one dist-java's install phase just used (cached in .cache/m2).
	rm -rf $(CACHE)/m2/com/proxmoxtalos/proxmoxtalos/$(VERSION)
	(cd $(CACHE) && $(MVN) -o org.apache.maven.plugins:maven-install-plugin:$$(ls $(CACHE)/m2/org/apache/maven/plugins/maven-install-plugin | sort -V | tail -1):install-file \
		-Dfile=$(MAVEN_DIR)/proxmoxtalos-$(VERSION).jar -DpomFile=$(MAVEN_DIR)/proxmoxtalos-$(VERSION).pom) 2>&1 | sed 's/\x1b\[0m//g'
	(cd tests/sdks/java && $(MVN) $(MVN_OFFLINE) -Dsdk.version=$(VERSION) test) 2>&1 | sed 's/\x1b\[0m//g'
	touch $(MVN_STAMP)
	@echo "java SDK: tests/sdks/java passes against dist/'s jar and POM (secret outputs are secret) and the schema's Java examples compile"

# ---------------------------------------------------------------------------------------------
# Release artifacts (docs/releasing.md). `make dist` builds into dist/ everything a release
# publishes: the provider plugin archives for six platforms, the npm tarball, the Python wheel
# and sdist, the Java jar with its sources, javadoc and POM (a Maven Central bundle layout) and
# one checksums file; installs each SDK package into a fresh project and type-checks programs
# against it (the SDK checks above); then checks that every artifact carries ./VERSION.
# `make test` does the same with only this machine's plugin archive (dist-check).

DIST      := $(ROOT)/dist
DIST_TOOL := go run ./gen/dist
NPM_TGZ   := proxmoxtalos-proxmoxtalos-$(VERSION).tgz
WHEEL     := pulumi_proxmoxtalos-$(VERSION)-py3-none-any.whl
MAVEN_DIR := $(DIST)/maven/com/proxmoxtalos/proxmoxtalos/$(VERSION)

.PHONY: dist
dist:
	rm -rf $(DIST)
	$(MAKE) --no-print-directory sdk-checks
	$(DIST_TOOL) plugins -dir $(DIST) -platforms all
	$(DIST_TOOL) checksums -dir $(DIST)
	$(DIST_TOOL) check -dir $(DIST) -platforms all
	@echo "dist: $(VERSION) is in dist/; to publish it see docs/releasing.md (make release-check first)"

# Before tagging a release: dist/ is complete and CHANGELOG.md has the version's section.
.PHONY: release-check
release-check:
	$(DIST_TOOL) check -dir $(DIST) -platforms all -release
	@echo "release-check: tag v$(VERSION) (provider, plugin downloads) and sdk/v$(VERSION) (Go SDK) on this commit"

# After sdk-checks (which build the SDK packages into dist/): this machine's plugin archive
# (cross-compiling six is make dist's job), the checksums, and the version check.
.PHONY: dist-check
dist-check:
	rm -f $(DIST)/pulumi-resource-proxmoxtalos-v*.tar.gz $(DIST)/*_checksums.txt
	$(DIST_TOOL) plugins -dir $(DIST) -platforms host
	$(DIST_TOOL) checksums -dir $(DIST)
	$(DIST_TOOL) check -dir $(DIST) -platforms host

# As Pulumi's own providers publish it: the compiled bin/ folder with package.json beside it.
.PHONY: dist-nodejs
dist-nodejs:
	cd sdk/nodejs && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error && npx tsc
	cp sdk/nodejs/package.json sdk/nodejs/README.md LICENSE sdk/nodejs/bin/
	rm -f $(DIST)/$(NPM_TGZ) && mkdir -p $(DIST)
	cd sdk/nodejs/bin && npm pack --pack-destination $(DIST) --loglevel=error >/dev/null
	@echo "dist: $(NPM_TGZ)"

# The sdist, then the wheel built from it (so the sdist is known to be complete), with a
# pinned build frontend (python -m build) in its own virtualenv. Built from a copy of sdk/python
# in .cache/py-src: setuptools writes its egg-info and the sdist's release tree into the folder it
# builds, and make test runs this beside tests/e2e, whose Python tests copy sdk/python.
.PHONY: dist-python
dist-python: export PIP_CONSTRAINT := $(ROOT)/tests/sdks/python-constraints.txt
dist-python:
	test -x $(CACHE)/py-build/bin/pyproject-build || { python3 -m venv $(CACHE)/py-build && \
		$(CACHE)/py-build/bin/pip install --quiet --disable-pip-version-check build; }
	rm -f $(DIST)/pulumi_proxmoxtalos-* && mkdir -p $(DIST)
	rm -rf $(CACHE)/py-src && mkdir -p $(CACHE)/py-src
	tar -C sdk/python --exclude=./build --exclude='*.egg-info' --exclude=__pycache__ -cf - . | tar -C $(CACHE)/py-src -xf -
	$(CACHE)/py-build/bin/pyproject-build --outdir $(DIST) $(CACHE)/py-src >/dev/null
	@echo "dist: $$(cd $(DIST) && ls pulumi_proxmoxtalos-* | tr "\n" " ")"

# The jar with its sources and javadoc jars (the pom's release profile) and the POM, in a
# Maven repository layout with the .md5/.sha1 files a Central Portal bundle wants (signing
# with gpg is the publisher's step: docs/releasing.md).
.PHONY: dist-java
dist-java:
	(cd sdk/java && $(MVN) $(MVN_OFFLINE) -Prelease install) 2>&1 | sed 's/\x1b\[0m//g'
	rm -rf $(MAVEN_DIR) && mkdir -p $(MAVEN_DIR)
	cp sdk/java/target/proxmoxtalos-$(VERSION).jar sdk/java/target/proxmoxtalos-$(VERSION)-sources.jar \
		sdk/java/target/proxmoxtalos-$(VERSION)-javadoc.jar $(MAVEN_DIR)/
	cp sdk/java/pom.xml $(MAVEN_DIR)/proxmoxtalos-$(VERSION).pom
	$(DIST_TOOL) maven-sums -dir $(DIST)
	@echo "java SDK: compiles with Maven, jar installed into .cache/m2; dist: $$(cd $(DIST) && ls maven/com/proxmoxtalos/proxmoxtalos/$(VERSION)/*.jar | tr '\n' ' ')"

# ---------------------------------------------------------------------------------------------
# The lab and the demo.

.PHONY: lab
lab:
	go run ./tests/lab/cmd/lab

# The lab embeds the part of the Proxmox VE API schema it serves (tests/lab/pveapi/schema.json),
# extracted from pve-docs' apidata, which lives outside the repository (../shared/pve-api).
PVE_APIDATA ?= $(firstword $(wildcard $(ROOT)/../shared/pve-api/apidata-9.1.3.json /work/shared/pve-api/apidata-9.1.3.json))
LAB_SCHEMA  := tests/lab/pveapi/schema.json

.PHONY: lab-schema
lab-schema:
	@if [ -z "$(PVE_APIDATA)" ]; then \
		echo "lab-schema: no ../shared/pve-api/apidata-9.1.3.json here: set PVE_APIDATA=<path to apidata JSON>"; exit 1; \
	fi
	go run ./tests/lab/pveapi/gen -in $(PVE_APIDATA) -out $(LAB_SCHEMA)

# Fails when the embedded schema is not what the generator makes from the apidata; skipped
# (and says so) on a machine without the apidata, where the committed file is all there is.
.PHONY: check-lab-schema
check-lab-schema:
	@if [ -z "$(PVE_APIDATA)" ]; then \
		echo "check-lab-schema: SKIPPED: no ../shared/pve-api/apidata-9.1.3.json on this machine (set PVE_APIDATA to check $(LAB_SCHEMA))"; \
		exit 0; \
	fi; \
	tmp=$$(mktemp); trap 'rm -f "$$tmp"' EXIT; \
	go run ./tests/lab/pveapi/gen -in "$(PVE_APIDATA)" -out "$$tmp"; \
	if ! cmp -s "$$tmp" $(LAB_SCHEMA); then \
		echo "check-lab-schema: $(LAB_SCHEMA) differs from what tests/lab/pveapi/gen makes from $(PVE_APIDATA):"; \
		echo "run 'make lab-schema' and commit the result"; exit 1; \
	fi; \
	echo "check-lab-schema: $(LAB_SCHEMA) is current with $(PVE_APIDATA)"

# The example the demo runs: a whole TalosCluster (examples/yaml-vms shows plain VMs).
DEMO_EXAMPLE ?= examples/yaml-cluster

.PHONY: demo
demo: tools provider
	go run ./tests/demo -example $(DEMO_EXAMPLE)
