# idemlambda: every target is listed by `make help` and documented in README.md.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO        ?= go
GOFLAGS   ?=
export GOFLAGS
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

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_%-]+:.*## / {printf "  %-14s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build every function under functions/ as bin/<fn>/bootstrap (linux/arm64).
	@for fn in $(FUNCTIONS); do \
		echo "build $$fn ($(LAMBDA_GOOS)/$(LAMBDA_GOARCH))"; \
		CGO_ENABLED=0 GOOS=$(LAMBDA_GOOS) GOARCH=$(LAMBDA_GOARCH) \
			$(GO) build $(LAMBDA_FLAGS) -o $(BIN)/$$fn/bootstrap ./functions/$$fn; \
	done

.PHONY: fmt-check
fmt-check: ## Fail if any Go file is not gofmt-formatted.
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

.PHONY: vet
vet: ## Run go vet on every package.
	$(GO) vet ./...

.PHONY: test
test: vet ## go vet, then every test with -race on $(DYNAMODB_TEST_BACKEND) (default embedded).
	$(GO) test -race -count=1 ./...

.PHONY: ci
ci: fmt-check test ## Everything CI runs.

.PHONY: clean
clean: ## Remove build output.
	rm -rf $(BIN)
