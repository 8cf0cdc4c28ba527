# The `container` test backend (internal/testkit/ddbtest, testcontainers-go) on a
# Docker engine: the embedded store as an image, and one run of the
# conformance suite and pkg/idem on it (what CI does; no registry needed).

# The image make store-image builds and make container-test runs by default.
STORE_IMAGE ?= idemlambda/embedded-store:local

.PHONY: store-image
store-image: ## Build the embedded store (cmd/local -addr "", static) as the image STORE_IMAGE, a stand-in for amazon/dynamodb-local.
	STORE_IMAGE=$(STORE_IMAGE) GO=$(GO) scripts/store-image.sh

.PHONY: container-test
container-test: ## internal/testkit/ddbtest and pkg/idem on the container backend, image DYNAMODB_TEST_IMAGE (default STORE_IMAGE, built first); Ryuk off, containers removed.
	STORE_IMAGE=$(STORE_IMAGE) GO=$(GO) scripts/container-test.sh
