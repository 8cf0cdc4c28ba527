# The library's exported API, recorded in pkg/api, and its releases
# (docs/releasing.md).

.PHONY: api-check
api-check: ## Fail if pkg/api is not the library's exported API, or a line removed or changed is not named in the Unreleased section of pkg/CHANGELOG.md.
	$(GO) run ./internal/tools/apicheck

.PHONY: api-update
api-update: ## Rewrite pkg/api from the library's exported API (refused while a breaking change is not named in pkg/CHANGELOG.md).
	$(GO) run ./internal/tools/apicheck -update
