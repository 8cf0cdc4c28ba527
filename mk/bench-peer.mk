# make bench-peer: idemlambda's POST /products against Powertools for AWS
# Lambda (TypeScript) idempotency, the same workloads on the same
# DynamoDB-compatible endpoint. See bench/README.md; writes bench/RESULTS.md,
# bench/results.json and bench/results.png.

BENCH_PEER_WORK  := bench/.work
# plot.py's matplotlib, pinned in bench/requirements.txt, in its own venv.
BENCH_PEER_VENV  ?= .venv/bench
BENCH_PEER_STAMP := $(BENCH_PEER_VENV)/.bench-requirements
# Extra flags for bench/cmd/peer, e.g. BENCH_PEER_FLAGS="-seq-keys 200".
BENCH_PEER_FLAGS ?=
BENCH_PEER_NODE ?= node
BENCH_PEER_NPM  ?= npm

$(BENCH_PEER_STAMP): bench/requirements.txt
	@test -x $(BENCH_PEER_VENV)/bin/pip || python3 -m venv $(BENCH_PEER_VENV)
	$(BENCH_PEER_VENV)/bin/pip install --disable-pip-version-check --quiet -r bench/requirements.txt
	@touch $@

.PHONY: bench-peer
bench-peer: $(BENCH_PEER_STAMP) ## Benchmark POST /products against Powertools (TS) idempotency on one store; writes bench/RESULTS.md and bench/results.png.
	@command -v $(BENCH_PEER_NODE) >/dev/null || { echo "bench-peer: $(BENCH_PEER_NODE) (Node.js >= 20) is required" >&2; exit 1; }
	@echo "bench-peer: $$(nproc) CPUs, load average $$(cut -d' ' -f1-3 /proc/loadavg)"
	cd bench/powertools && $(BENCH_PEER_NPM) ci --no-audit --no-fund --loglevel=error
	@mkdir -p $(BENCH_PEER_WORK)
	$(GO) build -o $(BENCH_PEER_WORK)/local ./cmd/local
	$(GO) build -o $(BENCH_PEER_WORK)/gorunner ./bench/cmd/gorunner
	$(GO) build -o $(BENCH_PEER_WORK)/goconsumer ./bench/cmd/goconsumer
	$(GO) build -o $(BENCH_PEER_WORK)/peer ./bench/cmd/peer
	$(BENCH_PEER_WORK)/peer -node $(BENCH_PEER_NODE) $(BENCH_PEER_FLAGS)
	$(BENCH_PEER_VENV)/bin/python bench/plot.py bench/results.json bench/results.png
	@echo "bench-peer: bench/RESULTS.md, bench/results.png"
