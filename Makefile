# jobctl — `make help` lists the targets.
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
DSN = $${JOBCTL_DSN:-$$(cat .pg/dsn)}
# the suites' own cluster and database: `make test` never reads or writes the one `make db` gives you
# (TEST_PG_PORT=N: another port, for a second checkout's suites beside this one's)
TEST_PG_PORT ?= 55442
TEST_ENV := JOBCTL_PGNAME=.test-pg JOBCTL_PG_DB=jobctl_test JOBCTL_PG_PORT=$(TEST_PG_PORT)
TEST_DSN = $$(cat .test-pg/dsn)
PYTEST := $(TEST_ENV) $(BIN)/pytest --durations=40

.DEFAULT_GOAL := help
.PHONY: help setup db db-stop db-destroy clean-db migrate validate demo demo-stop test test-db test-quick lint sqlfluff pgtap pytest bench-setup bench bench-quick bench-budget bench-claim bench-tenants bench-retention bench-held bench-xids bench-notify bench-bloat bench-sealing bench-access bench-limits bench-dashboard bench-counters bench-metrics bench-progress bench-overhead bench-workflows bench-watchers bench-archive bench-durable chaos ha-drill shards pooler-test shard-move probe cardinality fuzz sql-reference psql loc clean

help: ## List the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

setup: ## Install PostgreSQL + pg_cron/pg_partman/pgTAP/pg_prove for the installed major, and the venv
	@bin/setup

db: setup ## Start the private cluster under .pg/ (pg_cron preloaded), migrate, write .pg/dsn
	@bin/db

db-stop: ## Stop the private cluster
	@bin/db stop

db-destroy: ## Stop the private cluster and delete .pg/
	@bin/db destroy

clean-db: ## Stop every cluster of this checkout and delete its data, wherever it lives (.pg, .test-pg, .bench-pg, and what a drill left in .ha, .shards, .pooler; seconds)
	@for c in .pg .test-pg .bench-pg; do [ ! -e $$c ] || JOBCTL_PGNAME=$$c bin/db destroy; done
	@bin/clean-drills

migrate: setup ## Apply pending migrations and re-apply the SQL functions
	@$(BIN)/jobctl migrate

validate: setup ## Exit non-zero when the database is behind the files
	@$(BIN)/jobctl validate

demo: db ## Start a worker and the API (background, logs in .demo/), run sample jobs, print a token
	@bin/demo

demo-stop: ## Stop the demo's worker and API
	@bin/demo stop

test-db: setup ## A fresh test database on the tests' own cluster (.test-pg/, port 55442 up): dropped and made anew (about 10 s)
	@$(TEST_ENV) bin/db fresh

test: setup ## Run sqlfluff, ruff, mypy, pgTAP (pg_prove) and pytest in a fresh test database on .test-pg/ (about 21 minutes)
	@# the linters (CPU) beside the fresh test database and pgTAP (mostly the server's), then pytest
	@$(MAKE) --no-print-directory -j2 --output-sync=target lint pgtap
	@$(PYTEST)

lint: setup sqlfluff ## Run sqlfluff, ruff and mypy
	@$(BIN)/ruff check python tests benchmarks tools
	@$(BIN)/ruff format --check python tests benchmarks tools
	@$(BIN)/mypy

sqlfluff: setup ## Lint the SQL files
	@$(BIN)/sqlfluff lint --processes 2 migrations sql

pgtap: test-db ## Run the pgTAP suites with pg_prove in the test database (about 20 s)
	@psql "$(TEST_DSN)" -qX -v ON_ERROR_STOP=1 -c 'create extension if not exists pgtap'
	@psql "$(TEST_DSN)" -qX -v ON_ERROR_STOP=1 -o /dev/null -f sql/tests/neighbours.psql
	@set -o pipefail; PGOPTIONS='--client-min-messages=warning' pg_prove --dbname "$$(echo "$(TEST_DSN)" | sed 's/=/\\=/g')" --ext .sql sql/tests/ | tee .test-pg/pg_prove.log
	@grep -q '^Result: PASS' .test-pg/pg_prove.log

test-quick: pgtap ## The edit-run loop: pgTAP and the pytest suites not marked slow (no drills, builds or benchmark smokes), stopping at the first failure (about 3 minutes)
	@$(TEST_ENV) $(BIN)/pytest -x -m "not slow"

pytest: test-db ## Run the pytest suites in the test database (real concurrency, real processes; about 18 minutes)
	@$(PYTEST)

bench-setup: setup ## Install the peers for the benchmarks (npm: graphile-worker, pg-boss; a venv: pgqueuer, procrastinate)
	@bin/bench-setup

bench: bench-setup ## jobctl vs its peers side by side, 3 rounds, 100,000-job drains (about 20 minutes)
	@$(BIN)/python benchmarks/compare.py

bench-quick: bench-setup ## The same comparison, smaller and one round (about 5 minutes)
	@$(BIN)/python benchmarks/compare.py --quick

bench-budget: setup ## The worker's per-job budget: where a no-op job's microseconds go (py-spy stages of the worker's CPU, the server's functions, wait events), 3 rounds of 60,000 jobs (about 3 minutes)
	@$(BIN)/python benchmarks/worker_budget.py

bench-claim: setup ## C-depth: claim p50/p99 at 10,000 and JOBS due and after JOBS churned, jobctl vs a naive SKIP LOCKED queue (JOBS=1000000 TENANTS=1000)
	@$(BIN)/python benchmarks/claim_depth.py --jobs $${JOBS:-1000000} --tenants $${TENANTS:-1000}

bench-retention: setup ## DROP PARTITION vs DELETE for a week of 1,400,000 finished jobs: time, WAL, dead tuples, size (about 3 minutes)
	@$(BIN)/python benchmarks/retention.py

bench-held: setup ## A REPEATABLE READ transaction held 10 minutes while jobs flow at half the clean maximum: claim p50/p99, throughput, relation growth (about 14 minutes a run; RUNS=3 for three)
	@$(BIN)/python benchmarks/held_snapshot.py --runs $${RUNS:-1}

bench-durable: setup ## Durable execution: 10,000 jobs of 5 steps drained by the real worker against the same without steps; claim p99 with 100,000 parked jobs against none (about 6 minutes)
	@$(BIN)/python benchmarks/durable.py

bench-xids: setup ## Transaction IDs and MultiXacts per job, one by one and in batches of 100 (seconds)
	@$(BIN)/python benchmarks/xids.py

bench-bloat: setup ## Dead tuples of SKIP LOCKED churn (pgstattuple): naive table vs jobctl's slotted queue, autovacuum settings, held snapshot; heartbeat HOT share; row versions (pageinspect) (about 14 minutes)
	@$(BIN)/python benchmarks/bloat.py

bench-notify: setup ## Wake-ups off / hint / one NOTIFY a job: enqueue rate of 64 producers, and a worker whose listener is killed (about 7 minutes)
	@$(BIN)/python benchmarks/notify.py

bench-sealing: setup ## Payload encryption: submit and claim of an encrypting tenant beside a plain one, ratios and XIDs (seconds)
	@$(BIN)/python benchmarks/sealing.py

bench-access: setup ## The tenant rule's cost: claim and complete as a superuser, a worker of every tenant, a worker of one (seconds)
	@$(BIN)/python benchmarks/access.py

bench-limits: setup ## Concurrency keys and paused queues at scale: 100,000 keys at limit 1 (two jobs each) drained beside the same jobs without keys; single claims beside a paused queue of 1,000,000 jobs (about 5 minutes)
	@$(BIN)/python benchmarks/limits.py

bench-dashboard: setup ## The dashboard at 1,000,000 jobs across 1,000 tenants: GET / (overview) and the other pages, median and p95 of 30 rounds (about 2 minutes)
	@$(BIN)/python benchmarks/dashboard.py --jobs $${JOBS:-1000000} --tenants $${TENANTS:-1000}

bench-counters: setup ## The counters' cost on the hot path: submit and claim + complete throughput of HEAD against the commit before them, side by side, 5 rounds (about 3 minutes)
	@$(BIN)/python benchmarks/counters.py

bench-overhead: setup ## What jobs pay on the hot paths for what a change added: submit and claim + complete of HEAD against a base, side by side, 7 rounds; by default dependencies, batches and scoped keys against dae4780 (BASE=, ROUNDS=, OUT=; about 4 minutes)
	@$(BIN)/python benchmarks/counters.py --base $${BASE:-dae4780} --rounds $${ROUNDS:-7} --out $${OUT:-workflow_overhead.json}

bench-watchers: setup ## The completion hint's cost: claim + complete with the functions that end attempts at HEAD against dae4780's, swapped in one database, and with a watcher on every job (20 blocks, about 3 minutes)
	@$(BIN)/python benchmarks/watchers.py --blocks $${BLOCKS:-20}

bench-workflows: setup ## Dependencies at scale: a 1,000-node DAG (release and claim after the last parent, p50/p99) and a 10,000-parent fan-in beside a plain drain, 4 workers, 3 rounds (about 4 minutes)
	@$(BIN)/python benchmarks/workflows.py --rounds $${ROUNDS:-3}

bench-metrics: setup ## /metrics with the job series at 1,000 tenants x 10 queues: the scrape cold and within the TTL, its SQL and rendering halves (about 2 minutes)
	@$(BIN)/python benchmarks/metrics.py

bench-progress: setup ## Heartbeats with progress (about 60 bytes, and 2,000: the bound) beside plain ones, every job a new progress every beat: statement time, ratio, HOT share (5 rounds, about 1 minute)
	@$(BIN)/python benchmarks/progress.py

bench-tenants: setup ## Tenant scenarios: weights 5:3:1 over 60 s, a 1,000,000-job tenant beside 100 small ones (about 5 minutes)
	@$(BIN)/python benchmarks/tenants.py

bench-archive: setup ## The object archive: Parquet bytes vs the partitions' size in PostgreSQL, export time and get_job by id, per day of 100,000 jobs, a directory beside moto's S3 server on port 25551 (1 to 2 minutes)
	@$(BIN)/python benchmarks/archive.py $${SMALL:+--small}

chaos: db ## Chaos runs on the local cluster: kill -9, 40 s SIGSTOP, terminations, restarts, partitions for 15 minutes, then 300 zombie trials; invariants and requeue times (about 25 minutes)
	@$(BIN)/python benchmarks/drills/chaos.py --scenario faults
	@$(BIN)/python benchmarks/drills/chaos.py --scenario zombies

ha-drill: setup ## HA on Patroni: etcd + 2 PostgreSQL nodes under Patroni (.ha/, ports 25520-25539), synchronous mode, the epoch moved by bin/patroni-on-role-change; kill -9 of the leader's postmaster, a switchover and a crashed host under load, each round; lost/duplicates, promotion, downtime per client (ROUNDS=3, about 13 minutes)
	@cd benchmarks/drills && ../../$(BIN)/python ha_drill.py --rounds $${ROUNDS:-3}

shards: setup ## Sharding by tenant: a PL/Proxy router and 3 shard clusters (.shards/, ports 25500-25519): routing, router overhead, claims through the router vs direct, jobs/s per shard, fairness, one shard's jobs a day, chaos with a shard killed (about 5 minutes)
	@$(BIN)/python benchmarks/drills/shards.py

pooler-test: setup ## PgBouncer 1.18 in transaction pooling mode (.pooler/, ports 25540-25541) in front of a cluster of its own: the contract's suites through it, then its cost on submit and claim+complete (15 rounds) and connections with 200 clients (about 3 minutes)
	@$(BIN)/python benchmarks/drills/pooler.py all

shard-move: test-db ## Tenant moves between two shard databases of .test-pg under load (workers on both, a submitter): a 10,000-job backlog moved with a kill -9 of the mover and a rerun, then 3 clean moves back and forth: move time, pause window, lost/duplicated; and 1,000 durable jobs moved while emitters race the move (JOBS=, ROUNDS=; about 7 minutes)
	@$(TEST_ENV) SHARD_MOVE_JOBS=$${JOBS:-10000} SHARD_MOVE_ROUNDS=$${ROUNDS:-3} $(BIN)/pytest -p no:cacheprovider -q -s -k "load or figures or durable" tests/test_shard_move.py

cardinality: test-db ## The metrics and the queue list with 10,000 queues (tests/test_cardinality.py at the issue's size; make test runs it with 2,000; about 3 minutes)
	@$(TEST_ENV) JOBCTL_CARDINALITY_QUEUES=10000 $(BIN)/pytest -q -s tests/test_cardinality.py

fuzz: test-db ## The API fuzzed with 300 generated requests of each kind per operation (tests/test_fuzz_api.py; make test sends 50 and 20; about 10 minutes)
	@$(TEST_ENV) JOBCTL_FUZZ_EXAMPLES=300 $(BIN)/pytest -q tests/test_fuzz_api.py

probe: db ## The hostile probe: every hole replayed against the local cluster and its API, held/open per item and a second tenant's claim/submit p99; item 16 fills the NOTIFY queue, 8 GB, for about a minute; items 17-23 the lock table, the archive's lease, replayed hints, the router, parent_results, a client's waits, 10,000 queues (about 9 minutes; QUICK=1: about 3)
	@$(BIN)/python benchmarks/drills/hostile.py $${QUICK:+--quick} $${ITEMS:+--items $$ITEMS}

sql-reference: db ## Regenerate docs/sql-reference.md from the database's COMMENT ON texts (tests/test_sql_reference.py checks it is current; seconds)
	@$(BIN)/python tools/sql_reference.py --dsn "$(DSN)" > docs/sql-reference.md.tmp && mv docs/sql-reference.md.tmp docs/sql-reference.md

loc: ## Lines of code: Python under python/jobctl beside plpgsql under sql/functions, now and at 57ee5d7 (BASE=rev for another; seconds)
	@bin/loc --base $${BASE:-57ee5d7}

psql: db ## Open psql on the local database
	@psql "$(DSN)"

clean: ## Remove the venv and caches (keeps .pg/)
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache python/*.egg-info
