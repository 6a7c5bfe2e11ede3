# proxmoxtalos build. `make demo` and `make test` are the two commands a newcomer needs;
# the README's "Building and testing" section explains every target.
#
# Everything this file installs lands in ignored folders of the repository:
#   .tools/bin   Pulumi CLI + YAML language host (built from tools/go.mod)
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
PROVIDER  := $(ROOT)/bin/pulumi-resource-proxmoxtalos
SCHEMA    := schema/schema.json

# Tool versions come from tools/go.mod, so bumping a tool is a one-line change there.
PULUMI_VERSION := $(shell awk '$$1=="github.com/pulumi/pulumi/pkg/v3"{print $$2}' tools/go.mod)
YAML_VERSION   := $(shell awk '$$1=="github.com/pulumi/pulumi-yaml"{print $$2}' tools/go.mod)

GO_TEST_FLAGS ?= -p 2 -timeout 25m
export PATH := $(TOOLS_BIN):$(PATH)

# Caches for the language toolchains, kept inside the (ignored) repository folder so that a
# clean clone installs everything from the project's own pinned files.
export npm_config_cache := $(CACHE)/npm
export PIP_CACHE_DIR    := $(CACHE)/pip
MVN := mvn -B -q -Dmaven.repo.local=$(CACHE)/m2

.PHONY: help
help:
	@echo "make demo             build, start the lab, pulumi up a few VMs, show them, destroy, stop the lab"
	@echo "make test             everything CI runs (tools, provider, check-generated, go test, SDK builds)"
	@echo "make tools            Pulumi CLI $(PULUMI_VERSION) + YAML host $(YAML_VERSION) into .tools/bin"
	@echo "make provider         bin/pulumi-resource-proxmoxtalos (version $(VERSION))"
	@echo "make schema           schema/schema.json from the provider"
	@echo "make sdks             sdk/{go,nodejs,python,java} from the schema"
	@echo "make check-generated  fail if the committed schema/SDKs differ from a fresh generation"
	@echo "make lab              run the Proxmox VE + Talos lab in the foreground"

# ---------------------------------------------------------------------------------------------
# Tools: built only when missing or when tools/go.mod changed.

.PHONY: tools
tools: $(PULUMI) $(YAMLHOST)

$(PULUMI): tools/go.mod tools/go.sum
	@echo "building Pulumi CLI $(PULUMI_VERSION) (several minutes the first time)"
	cd tools && go build -o $@ \
		-ldflags "-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$(PULUMI_VERSION)" \
		github.com/pulumi/pulumi/pkg/v3/cmd/pulumi

$(YAMLHOST): tools/go.mod tools/go.sum
	@echo "building pulumi-language-yaml $(YAML_VERSION)"
	cd tools && go build -o $@ \
		-ldflags "-X github.com/pulumi/pulumi-yaml/pkg/version.Version=$(YAML_VERSION)" \
		github.com/pulumi/pulumi-yaml/cmd/pulumi-language-yaml
