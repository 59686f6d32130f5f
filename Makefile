# razao — run `make help` for the targets.
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(PATH)

.DEFAULT_GOAL := help

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: run
run: ## start the service; without DATABASE_URL, starts a local PostgreSQL in .pgdata/
	@scripts/run.sh

.PHONY: demo
demo: ## against a running `make run`: confirm, duplicate, race, refund, forge; print balances
	@test -s .dev/api-token || { echo "make demo: no .dev/api-token: start the service with 'make run' in another terminal first" >&2; exit 1; }
	@set -a && source "$$(bash scripts/dev-secrets.sh)" && set +a && go build -buildvcs=auto -o bin/razao ./cmd/razao && RAZAO_API_TOKEN="$$(cat .dev/api-token)" bin/razao demo

.PHONY: test
test: ## run every test, with the race detector, against a real PostgreSQL
	go test -race -count=1 ./...

.PHONY: bench
bench: ## run the Go benchmarks (pre-loads the ledger first; takes a few minutes)
	go test -run '^$$' -bench . -benchtime 5s -timeout 30m ./...

.PHONY: load
load: ## load test over loopback: fresh DB, pre-load, 8 scenarios (plain, flood, 1,000 streams, their fan-out alone, storm, mixed, 10 webhook subscribers, bcb-pix memory), pgbench ceiling, 3 sse, 2 webhook (1,000/s, 10 subscribers, plain and capped) and 5 pgbench alternating rounds (~22 min)
	@bash scripts/load/run.sh

.PHONY: versus
versus: ## confirmed deliveries/s of this tree against COMMIT, in alternating rounds in one run (ROUNDS=6, ~8 min)
	@test -n "$(COMMIT)" || { echo "make versus: say which commit to compare with: make versus COMMIT=<commit>" >&2; exit 2; }
	@bash scripts/load/versus.sh "$(COMMIT)"

.PHONY: replicas
replicas: ## multi-replica storm with kill -9 and PostgreSQL outages (DURATION=2m)
	go run ./scripts/replicas -duration $(or $(DURATION),2m)

.PHONY: fuzz
fuzz: ## run every fuzz target for FUZZTIME each (default 30s)
	@scripts/fuzz.sh

.PHONY: build
build: ## build bin/razao
	go build -buildvcs=auto -o bin/razao ./cmd/razao

.PHONY: image
image: ## build the container image razao:<commit> with podman (static binary on scratch; deploy/Containerfile)
	@bash scripts/image.sh

.PHONY: verify
verify: ## re-check the ledger invariants of the database at DATABASE_URL
	go run ./cmd/razao verify

.PHONY: check
check: ## gofmt, go vet
	@test -z "$$(gofmt -l .)" || { gofmt -l .; exit 1; }
	go vet ./...

.PHONY: pg-stop
pg-stop: ## stop the local PostgreSQL that `make run` started
	@scripts/localpg.sh stop
