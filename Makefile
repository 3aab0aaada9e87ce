# mcp-hub: `make run` starts the hub on its embedded default config;
# `make test` installs what the tests need and runs every test.
SHELL := /bin/bash
GO ?= go
# `mcp-hub version` prints these: a semver (v0.1.0 on the tag, else
# v0.1.1-dev+<commit>, see hack/version.sh), the commit and the build date.
VERSION ?= $(shell hack/version.sh)
COMMIT ?= $(shell git rev-parse --short=7 HEAD 2>/dev/null || echo unknown)
DATE ?= $(shell date -u +%Y-%m-%d)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)
LISTEN ?= 127.0.0.1:8080
INTEROP := test/interop
CONFORMANCE := test/conformance

.PHONY: all build run test test-deps vet bench clean

all: build

build:
	@echo "building bin/mcp-hub $(VERSION) with go build (the first build compiles about 1,160 packages: a few minutes; later builds relink only what changed)"
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/mcp-hub ./cmd/mcp-hub

run: build
	./bin/mcp-hub serve --listen $(LISTEN) $(ARGS)

# Everything the tests need, installed once and cached outside the repo
# (~/.cache/mcp-hub): pinned npm packages (lockfile) for the interop tests
# (the official reference server and the official TypeScript SDK client) and
# for the conformance tests (the official MCP conformance suite with the Node
# 22 it needs); Debian's chromium; and Go programs built from the Go module
# proxy. On a fresh machine these builds are most of a cold `make test`, so
# they run DEPS_JOBS at a time, the longest first: one Go build leaves a
# 2-core machine idle while it links or downloads (times in docs/ci.md).
DEPS_JOBS ?= 3
TEST_DEPS := kube-bins goreleaser hydra helm idp everything-server cyclonedx-gomod actionlint apt-deps \
	$(INTEROP)/node_modules/.installed $(CONFORMANCE)/node_modules/.installed
test-deps:
	@$(MAKE) --no-print-directory -j$(DEPS_JOBS) --output-sync=target $(TEST_DEPS)

# Debian packages, in one apt-get (two at once would fight over dpkg's
# lock): chromium, the headless browser of the web console's test
# (test/console, driven with chromedp), and qemu-user, which runs the
# linux/arm64 release binary in `make release-check`. Installed when
# missing: CI runs as root on a fresh Debian.
APT_DEPS := /usr/bin/chromium:chromium /usr/bin/qemu-aarch64:qemu-user
.PHONY: apt-deps chromium
chromium: apt-deps
apt-deps:
	@missing=; for d in $(APT_DEPS); do [ -x $${d%%:*} ] || missing="$$missing $${d#*:}"; done; \
	if [ -n "$$missing" ]; then \
		echo "apt-get install$$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

# kube-apiserver and etcd for the Kubernetes tests, built once from the Go
# module proxy into ~/.cache/mcp-hub (10-20 min on a fresh 2-core machine).
.PHONY: kube-bins
kube-bins:
	hack/kube-bins.sh >/dev/null

$(INTEROP)/node_modules/.installed: $(INTEROP)/package.json $(INTEROP)/package-lock.json
	cd $(INTEROP) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

$(CONFORMANCE)/node_modules/.installed: $(CONFORMANCE)/package.json $(CONFORMANCE)/package-lock.json
	cd $(CONFORMANCE) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# go-sdk's conformance everything-server, built once from the Go module proxy
# into ~/.cache/mcp-hub (~40 s on a fresh 2-core machine).
.PHONY: everything-server
everything-server:
	hack/everything-server.sh >/dev/null

# Ory Hydra, the real OAuth 2.1 / OpenID Connect authorization server the
# tests get JWT access tokens from (internal/hubtest/hydra), built once
# from the Go module proxy into ~/.cache/mcp-hub (~3 min on a 2-core machine).
.PHONY: hydra
hydra:
	hack/hydra.sh >/dev/null

# hack/idp, the RFC 8693 token exchange service the tests of issue 24 run
# (internal/hubtest/idp), on zitadel/oidc; a module of its own, built into
# ~/.cache/mcp-hub once per change of its sources (40-65 s on a
# fresh 2-core machine).
.PHONY: idp
idp:
	hack/idp.sh >/dev/null

# helm (the chart's lint and render), GoReleaser v2 (the release tool,
# .goreleaser.yaml), actionlint (the checker of .github/workflows) and
# cyclonedx-gomod (the SBOM writer), built once from the Go module proxy into
# ~/.cache/mcp-hub.
.PHONY: goreleaser actionlint cyclonedx-gomod helm
helm:
	hack/helm.sh >/dev/null
goreleaser:
	hack/goreleaser.sh >/dev/null
actionlint:
	hack/actionlint.sh >/dev/null
cyclonedx-gomod:
	hack/cyclonedx-gomod.sh >/dev/null

# python.wasm, the static-analysis tool's Python parser (tree-sitter and its
# Python grammar compiled to WebAssembly, internal/pyparse), rebuilt from
# its C sources; needs Debian's clang-14, lld-14, wasi-libc and
# libclang-rt-14-dev-wasm32. Not part of `make test`: the module is
# committed, and a test checks it matches wasm/shim.c.
.PHONY: pyparse-wasm
pyparse-wasm:
	internal/pyparse/wasm/build.sh

# The release, checked without publishing anything: `goreleaser check`
# validates .goreleaser.yaml, actionlint the workflows, then the whole
# snapshot release but the image and the upload: six cgo-free binaries
# (linux, darwin, windows; amd64, arm64), each checked with `file`, the
# linux ones run (arm64 under qemu-user) and made to print their version,
# whose shape must be the one docs/install.md shows; six archives, six
# SBOMs and checksums.txt; and the chart packaged at the same version
# (hack/release-check.sh). The image is built by the release workflow
# (buildx, both architectures). Output goes to dist/ (gitignored).
.PHONY: release-check
release-check: goreleaser actionlint cyclonedx-gomod helm apt-deps
	@hack/release-check.sh

vet:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...

# Each step says how long it took (hack/step.sh); a failing step stops the
# run. `make test-go` is the last step alone.
TEST_STEPS := test-deps vet helm-test release-check fuzz budgets test-go
test:
	@set -e; for s in $(TEST_STEPS); do hack/step.sh "$$s" $(MAKE) --no-print-directory $$s; done

.PHONY: test-go
test-go:
	$(GO) test -race -count=1 -timeout 20m ./...

# Budgets the race detector would distort (it changes what allocates), so
# they build without it and run apart: the allocations of one fast-path
# tools/call in the hub (issue 22: at most 120), of a resources/read and a
# prompts/get (issue 34: reported, at most 300).
.PHONY: budgets
budgets:
	@out=$$($(GO) test -count=1 -run 'TestFastPathAllocations|TestOtherMethodsAllocations' -v ./internal/hub/ 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ]; then echo "$$out"; exit $$rc; fi; echo "$$out" | grep -E 'allocations per|^ok'

# Each fuzz target runs for FUZZTIME (30 s) on every `make test` (its seeds
# first, then a random search; issue 41): the strict JSON-RPC reading, the
# call the hub sends upstream, the read-only classifier, the config parser,
# the result cap (its limits, and its one-pass reading against the decoding
# reference it replaced), the hub's dispatcher (any message: one valid JSON-RPC
# answer with its id, none to a notification) and the guardrails'
# normalizer. A failing input is written to the package's testdata/fuzz,
# where `go test` replays it from then on. FUZZTIME=5m for a longer look.
#
# Go 1.26's fuzz coordinator can fail a target with a bare "context deadline
# exceeded" when -fuzztime ends while a worker is mid-call on a loaded
# machine (golang/go#75804, fixed in Go 1.27): no input is written and
# nothing reproduces. That one result is reported and not counted; every
# real finding writes its input ("Failing input written") and fails.
FUZZTIME ?= 30s
FUZZ_TARGETS := ./internal/jsonrpc:FuzzParse ./internal/jsonrpc:FuzzParseToolCall ./internal/upstream:FuzzForwardedCall \
	./internal/autonomy:FuzzClassify ./internal/config:FuzzParse ./internal/resultcap:FuzzApply ./internal/resultcap:FuzzApplyReference \
	./internal/dispatch:FuzzDispatch ./internal/dispatch:FuzzStamp ./internal/guardrails/normalize:FuzzNormalize ./internal/guardrails:FuzzAppendCuts \
	./internal/guardrails:FuzzUnquote
.PHONY: fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($(FUZZTIME))"; \
		if ! out=$$($(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" 2>&1); then \
			if grep -q 'context deadline exceeded' <<<"$$out" && ! grep -q -e 'Failing input written' -e 'panic:' <<<"$$out"; then \
				echo "  the fuzz coordinator's deadline race (golang/go#75804), no input found: not counted"; \
			else echo "$$out"; exit 1; fi; \
		fi; \
	done

# The Helm chart: lint (strict, values.schema.json enforced) and render with
# the default values and with ci/ha-values.yaml. helm is built once from the Go
# module proxy into a cache outside the repo by hack/helm.sh. The rendered
# manifests are checked in detail by charts/mcp-hub/chart_test.go (go test).
CHART := charts/mcp-hub
.PHONY: helm-test
helm-test:
	@set -e; helm=$$(hack/helm.sh); \
	for v in "" "--values $(CHART)/ci/ha-values.yaml"; do \
		echo "helm lint --strict $(CHART) $$v"; \
		$$helm lint --strict --quiet $(CHART) $$v; \
		$$helm template hub $(CHART) --namespace purko $$v >/dev/null; \
	done

# The soak (issue 41, test/soak): three replicas behind a round-robin
# balancer under every kind of caller (hub tokens, a rate-limited admin who
# approves held writes, a budgeted agent run, anonymous, a pod's
# ServiceAccount) on every face (Streamable HTTP 2025-11-25, 2025-03-26 and
# stateless 2026-07-28, SSE, WebSocket, REST) for SOAK_DURATION, while an
# upstream is stopped and started by PID every 20 s, a hostile one
# misbehaves, the config files are rewritten every 30 s and the
# kube-apiserver restarts; then every call is matched to the audit and the
# upstreams' journals, the logs' errors to the injected faults, and RSS and
# goroutines to their level after the warm-up. `make test` runs it for 2
# minutes (the test's default); here for 10, under the race detector like
# the rest (it checks the soak's own code: the hubs run the plain binary).
# A longer soak needs a longer SOAK_TIMEOUT: the duration and 5 minutes.
SOAK_DURATION ?= 10m
SOAK_TIMEOUT ?= 30m
.PHONY: soak
soak: kube-bins everything-server
	SOAK_DURATION=$(SOAK_DURATION) $(GO) test -race -count=1 -timeout $(SOAK_TIMEOUT) -run TestSoak -v ./test/soak/

bench: test-deps
	$(GO) run ./test/bench -out bench-results.json
	@echo
	@$(GO) test -count=1 -v -run 'TestKubernetesDiscovery$$' ./test/kube/ | grep -E 'latency:|^(ok|FAIL)'


clean:
	rm -rf bin dist $(INTEROP)/node_modules $(CONFORMANCE)/node_modules
