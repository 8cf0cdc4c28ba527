# AWS SAM: template.yaml validation and the per-function builds `sam build`
# runs (BuildMethod: makefile calls `make build-<LogicalId>` with
# ARTIFACTS_DIR set to .aws-sam/build/<LogicalId>).

# The sam CLI, pinned, in its own virtualenv (reused while the pin holds).
SAM_VERSION ?= 1.170.0
SAM_VENV    ?= .venv/sam
SAM         := $(SAM_VENV)/bin/sam
SAM_STAMP   := $(SAM_VENV)/.aws-sam-cli-$(SAM_VERSION)
# Region for cfn-lint's resource specs; nothing is sent to AWS.
SAM_REGION  ?= us-east-1
# The functions of template.yaml, by logical id, read from the template
# (a resource of Type AWS::Serverless::Function): nothing to keep by hand.
SAM_FUNCTIONS := $(shell awk '/^  [A-Za-z0-9]+:$$/ {id = substr($$1, 1, length($$1) - 1)} /^    Type: AWS::Serverless::Function$$/ {print id}' template.yaml)
# Offline and in CI: no telemetry.
export SAM_CLI_TELEMETRY := 0

$(SAM_STAMP):
	@test -x $(SAM_VENV)/bin/pip || python3 -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/pip install --disable-pip-version-check --quiet 'aws-sam-cli==$(SAM_VERSION)'
	@rm -f $(SAM_VENV)/.aws-sam-cli-*
	@touch $@

.PHONY: validate
validate: $(SAM_STAMP) ## Lint template.yaml (sam validate --lint, offline) and sam build the linux/arm64 bootstraps into .aws-sam/build.
	$(SAM) validate --lint --region $(SAM_REGION)
	@# Informational rules too (sam validate --lint reports errors and warnings only).
	$(SAM_VENV)/bin/cfn-lint --include-checks I --regions $(SAM_REGION) -- template.yaml
	@# In the checkout (--build-in-source): without it sam copies the whole
	@# repository, .venv/sam included, once per function (85 s instead of 2 s
	@# with a warm Go cache). Not --parallel: go build already uses every core,
	@# and parallel sam builds had their compiles interrupted here.
	$(SAM) build --build-in-source
	@for fn in $(SAM_FUNCTIONS); do \
		b=.aws-sam/build/$$fn/bootstrap; \
		test -x "$$b" || { echo "validate: $$b is missing or not executable" >&2; exit 1; }; \
		magic=$$(od -An -tx1 -N4 "$$b" | tr -d ' \n'); \
		machine=$$(od -An -tx1 -j18 -N2 "$$b" | tr -d ' \n'); \
		if [ "$$magic" != 7f454c46 ] || [ "$$machine" != b700 ]; then \
			echo "validate: $$b is not a linux/arm64 ELF binary (magic $$magic, e_machine $$machine)" >&2; exit 1; \
		fi; \
		if command -v file >/dev/null 2>&1; then file "$$b"; else echo "$$b: ELF aarch64"; fi; \
	done

# sam build calls `make build-<LogicalId>` with ARTIFACTS_DIR set. One
# rule serves every function: the logical id is the function's folder
# under functions/ in CamelCase plus "Function" (CreateProductFunction is
# functions/createproduct), the naming internal/config and the template
# drift test hold. The architecture is the template's (arm64), whatever
# LAMBDA_GOARCH says for `make build`.
build-%Function: ## (sam build) functions/<logical id less Function, lower case> as $ARTIFACTS_DIR/bootstrap, linux/arm64.
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 1; }
	@fn=$$(echo '$*' | tr '[:upper:]' '[:lower:]'); \
	test -d "functions/$$fn" || { echo "$@: no folder functions/$$fn for logical id $*Function" >&2; exit 1; }; \
	echo "build functions/$$fn (linux/arm64) -> $(ARTIFACTS_DIR)/bootstrap"; \
	CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build $(LAMBDA_FLAGS) -o "$(ARTIFACTS_DIR)/bootstrap" "./functions/$$fn"

# `sam local invoke`, for real: the arm64 bootstraps in Docker against a
# local store (scripts/sam-invoke.sh), and the test that does it in CI.
.PHONY: sam-invoke
sam-invoke: $(SAM_STAMP) ## sam build, then FN with EVENT through `sam local invoke` (Docker) against make run's store or a temporary one.
	SAM=$(SAM) GO=$(GO) scripts/sam-invoke.sh $(FN) $(EVENT)

.PHONY: sam-test
sam-test: $(SAM_STAMP) ## Test create, replay, get and relay through `sam local invoke` (Docker, arm64); skips without Docker, fails with CI=true.
	@# The base image first (pulled where a registry answers, else the stand-in
	@# built), so the test's own traffic stays on this machine; without a
	@# Docker engine the test skips, or fails with CI=true, and says why.
	@if docker info >/dev/null 2>&1; then image=$$(scripts/sam-base-image.sh); else image=; fi; \
	echo "SAM=$(abspath $(SAM)) SAM_INVOKE_IMAGE=$$image $(GO) test -tags sam -race -count=1 -v -timeout 15m ./test/sam/"; \
	SAM=$(abspath $(SAM)) SAM_INVOKE_IMAGE=$$image $(GO) test -tags sam -race -count=1 -v -timeout 15m ./test/sam/

# template.yaml deployed as committed to MiniStack, an AWS emulator, and the
# README's requests through its API Gateway (scripts/deploy-local.sh,
# test/deploy). Its own target and CI step: make test never runs it.
.PHONY: deploy-local
deploy-local: $(SAM_STAMP) ## Deploy template.yaml to MiniStack (pip, .venv/ministack; arm64 bootstraps under qemu) and send the README's requests through its API Gateway, signed; tears everything down.
	SAM=$(abspath $(SAM)) GO=$(GO) scripts/deploy-local.sh
