# Property-based testing of the HTTP API against docs/openapi.yaml.

.PHONY: api-fuzz
api-fuzz: ## Schemathesis (pip, .venv/schemathesis) against the local server: no 5xx, every response as docs/openapi.yaml says.
	API_FUZZ_EXAMPLES=$(API_FUZZ_EXAMPLES) scripts/api-fuzz.sh

API_FUZZ_EXAMPLES ?= 200
