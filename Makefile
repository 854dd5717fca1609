# recall: run `make help` for the targets.
GO ?= go

.PHONY: help
help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*## "} {printf "  %-12s %s\n", $$1, $$2}'

.PHONY: build
build: ## build bin/recall
	$(GO) build -o bin/recall ./cmd/recall

.PHONY: dev
dev: ## run recall with embedded defaults (NATS in-process, Postgres from DATABASE_URL or a private cluster)
	$(GO) run ./cmd/recall dev

.PHONY: test
test: ## run every test, with the race detector, against the machine's Postgres and NATS
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	$(GO) test -race -count=1 -timeout 20m ./...

.PHONY: test-short
test-short: ## the tests without the race detector
	$(GO) test -timeout 20m ./...

.PHONY: faults-long
faults-long: ## the long fault suite (kill loop, drains, outages, poison, JetStream cluster) — tens of minutes
	RECALL_FAULTS=long $(GO) test -timeout 90m -v ./faults

.PHONY: scale
scale: ## the per-event cost (CPU, commits, WAL, rows) behind docs/scaling.md, on a private Postgres
	RECALL_SCALE=full $(GO) test -count=1 -run TestCostPerEvent -v ./scale

.PHONY: bench
bench: ## Go benchmarks of the hot paths
	$(GO) test -run '^$$' -bench . -benchmem ./checkpoint ./evidence ./assemble ./api

.PHONY: eval
eval: ## evidence quality report over the fixtures
	$(GO) run ./cmd/recall eval

.PHONY: lint
lint: ## vet, staticcheck and gofmt
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)

.PHONY: example-langgraph
example-langgraph: ## run examples/langgraph-js (npm ci, node) against a running `recall dev`: paste its export lines first
	@test -n "$$RECALL_API_URL" && test -n "$$NATS_URL" && test -n "$$RECALL_TOKEN" || \
		{ echo "example-langgraph: set RECALL_API_URL, NATS_URL and RECALL_TOKEN: run 'make dev' in another shell and paste the export lines it prints" >&2; exit 1; }
	cd examples/langgraph-js && npm ci --no-audit --no-fund && node main.mjs

.PHONY: example-ai-sdk
example-ai-sdk: ## run examples/ai-sdk (npm ci, node) against a running `recall dev`: paste its export lines first (OPENAI_API_KEY: OpenAI's model, else a mock)
	@test -n "$$RECALL_API_URL" && test -n "$$RECALL_TOKEN" || \
		{ echo "example-ai-sdk: set RECALL_API_URL and RECALL_TOKEN: run 'make dev' in another shell and paste the export lines it prints" >&2; exit 1; }
	cd examples/ai-sdk && npm ci --no-audit --no-fund && node main.mjs

.PHONY: example-openai-agents
example-openai-agents: ## run examples/openai-agents (npm ci, node) against a running `recall dev`: paste its export lines first (OPENAI_API_KEY: OpenAI's model, else a scripted one)
	@test -n "$$RECALL_API_URL" && test -n "$$RECALL_TOKEN" || \
		{ echo "example-openai-agents: set RECALL_API_URL and RECALL_TOKEN: run 'make dev' in another shell and paste the export lines it prints" >&2; exit 1; }
	cd examples/openai-agents && npm ci --no-audit --no-fund && node main.mjs

.PHONY: bench-recall
bench-recall: build ## recall bench: throughput, lag, cost per turn, reads and memory on the machine's Postgres and NATS (BENCH_FLAGS=--quick)
	bin/recall bench $(BENCH_FLAGS)
