# End-to-end test of the whole pipeline on moto (issue 6).

.PHONY: e2e
e2e: ## POST /products -> DynamoDB -> Streams -> relay -> EventBridge -> SQS on moto (pip-installed in .venv/moto), with a failed PutEvents entry.
	GO=$(GO) scripts/e2e.sh
