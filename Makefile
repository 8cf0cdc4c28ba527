# idemlambda: every target is listed by `make help` and documented in docs/development.md.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
GOFLAGS   ?=
export GOFLAGS
# Every go command runs on this toolchain (downloaded once from the module
# proxy): Go 1.27 fixed the fuzz coordinator's end-of-fuzztime race
# (golang/go#75804). The modules' go directives stay the language minimum.
GOTOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN
# Lambda functions, one per folder under functions/.
FUNCTIONS := $(notdir $(patsubst %/,%,$(wildcard functions/*/)))
BIN       := bin
# Lambda build flags: static, RPC-less runtime, reproducible, stripped.
LAMBDA_GOOS   ?= linux
LAMBDA_GOARCH ?= arm64
LAMBDA_FLAGS  := -tags lambda.norpc -trimpath -ldflags "-s -w"
# Test backend for `make test` (embedded, endpoint or container).
DYNAMODB_TEST_BACKEND ?= embedded
export DYNAMODB_TEST_BACKEND

# Targets owned by one part of the project live in mk/*.mk.
-include mk/*.mk

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_%-]+:.*## / {printf "  %-28s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build every function under functions/ as bin/<fn>/bootstrap (linux/arm64).
	@for fn in $(FUNCTIONS); do \
		echo "build $$fn ($(LAMBDA_GOOS)/$(LAMBDA_GOARCH))"; \
		CGO_ENABLED=0 GOOS=$(LAMBDA_GOOS) GOARCH=$(LAMBDA_GOARCH) \
			$(GO) build $(LAMBDA_FLAGS) -o $(BIN)/$$fn/bootstrap ./functions/$$fn; \
	done

# Where make run's embedded store listens; make sam-invoke uses it when it
# is an address Docker containers reach (the bridge gateway, 172.17.0.1 on
# most Linux hosts).
STORE_ADDR ?= 127.0.0.1:8000
# REGIONS, two Regions or more separated by commas, runs the service in
# each on a simulated global table instead (APIs on :8080, :8081, ...).
REGIONS ?=
.PHONY: run
run: ## Run the API on :8080 with an embedded store on STORE_ADDR (default 127.0.0.1:8000; Ctrl-C stops); REGIONS=us-east-1,eu-west-1 runs it in two Regions of a simulated global table.
	$(GO) run ./cmd/local -store-addr $(STORE_ADDR) $(if $(REGIONS),-regions $(REGIONS))

FN    ?= createproduct
EVENT ?= events/create.json
.PHONY: invoke
invoke: ## Run FN's real bootstrap under aws-lambda-rie with EVENT (no Docker).
	scripts/invoke.sh $(FN) $(EVENT)

.PHONY: fmt-check
fmt-check: ## Fail if any Go file is not gofmt-formatted.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The Go modules (scripts/modules.sh): the application (.), the library
# (pkg), its OpenTelemetry adapter (pkg/idem/idemotel), the library's
# conformance suite (pkg/idem/idemconform) and the adopter test
# module (test/adopter).
MODULES = $(shell scripts/modules.sh)

.PHONY: vet
vet: ## Run go vet on every package of every module, the e2e, sam and deploy build tags included.
	@for m in $(MODULES); do echo "vet $$m"; (cd $$m && $(GO) vet ./...); done
	$(GO) vet -tags e2e ./test/e2e/
	$(GO) vet -tags sam ./test/sam/
	$(GO) vet -tags deploy ./test/deploy/

.PHONY: lint
lint: ## staticcheck (pinned as a tool in the application's go.mod) on every module, the e2e, sam and deploy build tags included.
	@sc=$$($(GO) tool -n staticcheck); for m in $(MODULES); do echo "staticcheck $$m"; (cd $$m && $$sc ./...); done
	$(GO) tool staticcheck -tags e2e ./test/e2e/
	$(GO) tool staticcheck -tags sam ./test/sam/
	$(GO) tool staticcheck -tags deploy ./test/deploy/

.PHONY: tidy-check
tidy-check: ## Fail if go mod tidy would change any module's go.mod or go.sum.
	@for m in $(MODULES); do echo "tidy $$m"; (cd $$m && $(GO) mod tidy -diff) || { echo "go mod tidy would change $$m"; exit 1; }; done

.PHONY: graph-check
graph-check: ## Resolve a throwaway adopter of the library (go mod tidy, only this repository's modules replaced): no test-only module, go.sum no longer than the bare third-party packages'.
	GO=$(GO) scripts/graph-check.sh

.PHONY: test
test: vet ## go vet, then every test with -race on $(DYNAMODB_TEST_BACKEND) (default embedded); skips say why.
	scripts/test.sh

# MUTANTS, a regexp on names and categories, narrows the mutants run (default: all).
.PHONY: mutants
mutants: ## Mutation check: every hand-made mutant of pkg/idem's exactly-once conditions and branches must fail a deterministic test; prints one line per mutant with the test that killed it (scripts/mutants.sh; MUTANTS narrows).
	scripts/mutants.sh

# FUZZTIME is go test's -fuzztime: a duration (10s) or an execution count
# (50000x, what CI uses, so the outcome never depends on the machine's load).
FUZZTIME ?= 10s
.PHONY: fuzz
fuzz: ## Run every Fuzz target for FUZZTIME each (default 10s; 50000x counts executions), one at a time (scripts/fuzz.sh).
	GO=$(GO) FUZZTIME=$(FUZZTIME) scripts/fuzz.sh

# Packages with a coverage floor, as module:package=percent.
COVER_FLOORS ?= pkg:./money=95
.PHONY: cover
cover: ## Check the coverage floors in COVER_FLOORS, as module:package=percent (pkg/money >= 95%).
	@for spec in $(COVER_FLOORS); do \
		where=$${spec%%=*}; floor=$${spec##*=}; mod=$${where%%:*}; pkg=$${where#*:}; \
		pct=$$(cd $$mod && $(GO) test -count=1 -cover $$pkg | sed -n 's/.*coverage: \([0-9.]*\)%.*/\1/p'); \
		echo "coverage $$pkg: $$pct% (floor $$floor%)"; \
		awk -v p="$$pct" -v f="$$floor" 'BEGIN { exit !(p != "" && p+0 >= f+0) }' || { echo "below floor"; exit 1; }; \
	done

BENCHTIME ?= 1s
.PHONY: bench
bench: ## Run every benchmark with -benchmem, the store in its own process (BENCHTIME, BENCH).
	BENCHTIME=$(BENCHTIME) scripts/bench.sh

.PHONY: sweep-sellers
sweep-sellers: ## Measure one hot seller's cost at 1, 2, 5 and 10 concurrent consumer environments, and at 6 with 1 to 16 shards (the tables behind the template's queue settings and sellers.Shards).
	SELLERS_SWEEP=1 $(GO) test -race -count=1 -run 'TestHotSellerConcurrencySweep' -v ./internal/sellers/sellersqs/ | grep -v '^{'

.PHONY: scan
scan: ## govulncheck on every module (the Go vulnerability database from the module proxy), checkov and the Serverless Rules on template.yaml; fails on any finding not in scripts/scan-baseline.yaml (scripts/scan.sh).
	GO=$(GO) scripts/scan.sh

.PHONY: ci
ci: fmt-check tidy-check graph-check api-check lint test mutants cover e2e api-fuzz validate scan fuzz ## Everything CI runs but its emulator and Docker steps (deploy-local, sam-test, container-test: .ci/run installs arm64 emulation and Docker for them).

.PHONY: clean
clean: ## Remove build output.
	rm -rf $(BIN)

# Where make init-time builds its host-architecture bootstraps.
INIT_TIME_DIR ?= $(BIN)/init-time
INIT_TIME_RUNS ?= 21
# NAME=value pairs added to each function's environment (not hello's), e.g.
# INIT_TIME_ENV="OTEL_TRACES_EXPORTER=otlp" to start with the exporter built.
INIT_TIME_ENV ?=
# INIT_TIME_TRACE=N then ranks the N costliest package initialisers each
# function runs beyond hello-world's (GODEBUG=inittrace=1; 0: none).
INIT_TIME_TRACE ?= 0
.PHONY: init-time
init-time: ## Each bootstrap, built for this machine, from exec to its first /next, against hello-world aws-lambda-go (INIT_TIME_RUNS, INIT_TIME_ENV, INIT_TIME_TRACE).
	@mkdir -p $(INIT_TIME_DIR)
	@for fn in hello $(FUNCTIONS); do \
		src=./functions/$$fn; [ $$fn = hello ] && src=./cmd/inittime/hello; \
		CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(INIT_TIME_DIR)/$$fn $$src; \
	done
	$(GO) run ./cmd/inittime -n $(INIT_TIME_RUNS) -trace $(INIT_TIME_TRACE) $(foreach e,$(INIT_TIME_ENV),-env $(e)) hello=$(INIT_TIME_DIR)/hello \
		$(foreach fn,$(FUNCTIONS),$(fn)=$(INIT_TIME_DIR)/$(fn))
