# The library's exported API, recorded in pkg/api, and its releases
# (docs/releasing.md).

.PHONY: api-check
api-check: ## Fail if the library's exported API drops or changes a line of pkg/api/v1 (what v1 released), drops or changes a line of pkg/api unrecorded, or if a line removed or changed since is not named in pkg/CHANGELOG.md's Unreleased; an added name passes, printed as a notice until make api-update records it.
	$(GO) run ./internal/tools/apicheck

.PHONY: api-update
api-update: ## Rewrite pkg/api from the library's exported API (refused while a change breaks pkg/api/v1, or is not named in pkg/CHANGELOG.md).
	$(GO) run ./internal/tools/apicheck -update

.PHONY: api-release
api-release: ## Add pkg/api to pkg/api/v1, the API v1 has released and keeps (a release's commit; refused unless api-check passes and pkg/api records every addition).
	$(GO) run ./internal/tools/apicheck -release
