#!/usr/bin/env bash
# Load test of razao on this machine, loopback only, every step bounded in
# time. It builds bin/razao, creates a fresh database razao_load_<pid> on the
# PostgreSQL at $DATABASE_URL (else 127.0.0.1:5432), migrates it, pre-loads
# it with PRELOAD paid charges (inbox rows, posting sets and postings), runs
# `razao verify`, serves razao on a free loopback port with scripts/dev.yaml
# and the dev secrets, runs the load scenarios, verifies again, then
# measures the raw PostgreSQL ceiling with pgbench on scratch bench_* tables
# in the same database, and prints every figure and the ratios. At exit it
# stops the server and drops the database (KEEP_DB=1 keeps it).
#
# Knobs (environment): N=6000 C=8 STORM=1000 DURATION=300s SCHEME=standard
# PRELOAD=200000 PGBENCH_CLIENTS=8 PGBENCH_SECONDS=15 ROUNDS=5 SSE_ROUNDS=3 OUT=<dir for logs and
# JSON; default a temporary dir, removed at exit> KEEP_DB=0 STREAMS=1000
# FLOOD_C=8 BCB_ITEMS=2000 WEBHOOK_RATE=1000 WEBHOOK_SECONDS=20
# WEBHOOK_ROUNDS=2 WEBHOOK_SUBSCRIBERS=10 WEBHOOK_CAP=4000.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH:/usr/lib/postgresql/15/bin"

N=${N:-6000}
C=${C:-8}
STORM=${STORM:-1000}
DURATION=${DURATION:-300s}
SCHEME=${SCHEME:-standard}
PRELOAD=${PRELOAD:-200000}
PGBENCH_CLIENTS=${PGBENCH_CLIENTS:-8}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-15}
ROUNDS=${ROUNDS:-5}
SSE_ROUNDS=${SSE_ROUNDS:-3}
KEEP_DB=${KEEP_DB:-0}
STREAMS=${STREAMS:-1000}
FLOOD_C=${FLOOD_C:-8}
BCB_ITEMS=${BCB_ITEMS:-2000}
WEBHOOK_RATE=${WEBHOOK_RATE:-1000}
WEBHOOK_SECONDS=${WEBHOOK_SECONDS:-20}
WEBHOOK_ROUNDS=${WEBHOOK_ROUNDS:-2}
WEBHOOK_SUBSCRIBERS=${WEBHOOK_SUBSCRIBERS:-10}
WEBHOOK_CAP=${WEBHOOK_CAP:-4000}

# shellcheck source=scripts/load/local.sh
source scripts/load/local.sh
int_in N "$N" 1 100000
int_in C "$C" 1 1000
int_in STORM "$STORM" 2 5000
int_in PRELOAD "$PRELOAD" 1000 2000000
int_in PGBENCH_CLIENTS "$PGBENCH_CLIENTS" 1 64
int_in PGBENCH_SECONDS "$PGBENCH_SECONDS" 1 120
int_in ROUNDS "$ROUNDS" 0 10
int_in SSE_ROUNDS "$SSE_ROUNDS" 0 10
int_in STREAMS "$STREAMS" 1 1000
int_in FLOOD_C "$FLOOD_C" 1 64
int_in WEBHOOK_RATE "$WEBHOOK_RATE" 1 5000
int_in WEBHOOK_SECONDS "$WEBHOOK_SECONDS" 1 20
int_in WEBHOOK_ROUNDS "$WEBHOOK_ROUNDS" 0 10
int_in WEBHOOK_SUBSCRIBERS "$WEBHOOK_SUBSCRIBERS" 1 100
int_in WEBHOOK_CAP "$WEBHOOK_CAP" 1 1000000
int_in BCB_ITEMS "$BCB_ITEMS" 1 5000
[[ $DURATION =~ ^[0-9]+[sm]$ ]] || die "DURATION=$DURATION must look like 300s or 5m"
dur_s=${DURATION%?}
[[ $DURATION == *m ]] && dur_s=$((dur_s * 60))
((dur_s >= 1 && dur_s <= 600)) || die "DURATION must be at most 10m"

command -v psql >/dev/null || die "psql is missing (apt-get install postgresql-client)"
command -v pgbench >/dev/null || die "pgbench is missing (apt-get install postgresql-contrib)"

# --- the database server: loopback or a local socket only -------------------
local_server "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"
DB="razao_load_$$"
# The same server, database $DB.
LOAD_URL=$(db_url "$DB")
redact() { sed -E 's#://([^:@/]*):[^@/]*@#://\1:***@#' <<<"$1"; }

WORK=$(mktemp -d /tmp/razao-load.XXXXXX)
OUTDIR=${OUT:-$WORK}
mkdir -p "$OUTDIR"
SERVER_PID=""
DB_CREATED=0

stop_server() {
	[[ -n $SERVER_PID ]] || return 0
	if kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -TERM "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 1 70); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$SERVER_PID" 2>/dev/null && kill -KILL "$SERVER_PID" 2>/dev/null || true
	fi
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=""
}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	stop_server
	if ((DB_CREATED)) && [[ $KEEP_DB != 1 ]]; then
		timeout 60 psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 ||
			echo "load/run.sh: could not drop database $DB" >&2
	elif ((DB_CREATED)); then
		echo "kept database $DB: $(redact "$LOAD_URL")" >&2
	fi
	if ((rc != 0)) && [[ -s $OUTDIR/serve.log ]]; then
		echo "--- last lines of razao's log:" >&2
		tail -n 20 "$OUTDIR/serve.log" | cut -c1-400 >&2
	fi
	rm -rf "$WORK"
	[[ -z ${OUT:-} ]] || echo "logs and JSON kept in $OUTDIR" >&2
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { printf '\n### %s  (%s, load average %s)\n' "$*" "$(date +%T)" "$(cut -d' ' -f1-3 /proc/loadavg)"; }
psql_load() { psql "$LOAD_URL" -X -q -v ON_ERROR_STOP=1 "$@"; }
# The pre-load and the bench tables write about a gigabyte of WAL: without
# a CHECKPOINT right after, the checkpoint it triggers writes out while the
# next measurement runs (seen: the first scenario at two thirds of its
# speed). CHECKPOINT needs superuser or pg_checkpoint; without, say so.
checkpoint() {
	psql_load -c "CHECKPOINT" 2>/dev/null ||
		echo "note: CHECKPOINT refused (needs superuser or pg_checkpoint); the next measurement may include the write-out of what came before"
}

# With autovacuum off (this machine's shared server runs so), nothing
# clears the dead rows each scenario leaves in the inbox, charges and
# outbox, and every later measurement reads through more of them than a
# server with autovacuum would ever keep (razao sets the inbox to be
# vacuumed after about a thousand changed rows: migration 0020). Then the
# tables both razao and pgbench write are vacuumed before each
# measurement, as autovacuum would have done; with it on, nothing is done.
AUTOVACUUM=""
vacuum_if_off() {
	[[ -n $AUTOVACUUM ]] || AUTOVACUUM=$(psql_load -At -c "SHOW autovacuum")
	[[ $AUTOVACUUM == off ]] || return 0
	timeout 300 psql "$LOAD_URL" -X -q -v ON_ERROR_STOP=1 -c "VACUUM (ANALYZE) inbox, charges, access_grants, outbox, posting_sets, postings, divergences" ||
		die "VACUUM failed"
	if psql_load -At -c "SELECT to_regclass('bench_inbox') IS NOT NULL" | grep -q t; then
		timeout 300 psql "$LOAD_URL" -X -q -v ON_ERROR_STOP=1 -c "VACUUM (ANALYZE) bench_charges, bench_grants, bench_inbox, bench_outbox, bench_posting_sets, bench_postings" ||
			die "VACUUM of the bench tables failed"
	fi
}

step "build"
mkdir -p bin
timeout 300 go build -o bin/razao ./cmd/razao
timeout 300 go build -o "$WORK/load" ./scripts/load
echo "bin/razao and the load tool built"

step "database $DB on $(redact "$ADMIN_URL")"
timeout 60 psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $DB"
DB_CREATED=1
psql "$ADMIN_URL" -X -At -c "SELECT 'server ' || version()" | cut -c1-60
psql "$ADMIN_URL" -X -At -c "SELECT string_agg(name || '=' || setting, ' ' ORDER BY name) FROM pg_settings
	WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers', 'max_connections', 'wal_level', 'max_wal_size')"
DATABASE_URL=$LOAD_URL timeout 120 bin/razao migrate

step "preload: $PRELOAD charges (inbox rows, posting sets, postings)"
t0=$(date +%s)
timeout 1200 psql "$LOAD_URL" -X -q -v ON_ERROR_STOP=1 -v n="$PRELOAD" -f scripts/load/preload.sql
echo "preload took $(($(date +%s) - t0)) s"
psql_load -At -c "SELECT 'database size ' || pg_size_pretty(pg_database_size(current_database()))"
checkpoint

step "razao verify (after the preload)"
DATABASE_URL=$LOAD_URL timeout 600 bin/razao verify || die "the preloaded ledger does not verify"

step "start razao serve on a free loopback port"
set -a
# shellcheck disable=SC1090
source "$(bash scripts/dev-secrets.sh)"
set +a
# The API's bearer tokens live in the database where razao has `razao
# token`; older builds read RAZAO_API_TOKEN from the environment instead.
API_TOKEN=${RAZAO_API_TOKEN:-}
commands=$(bin/razao help 2>&1 || true)
if grep -qE '^ +token ' <<<"$commands"; then
	API_TOKEN=$(DATABASE_URL=$LOAD_URL timeout 60 bin/razao token create -name load-test -scope read,write 2>/dev/null)
	echo "created API token 'load-test' (read,write) in $DB"
fi
# scripts/dev.yaml plus a bcb-pix endpoint for the bcb-memory scenario,
# its URL secret fresh for this run: inserted as the first item of the
# endpoints list, wherever that list is in the file.
RAZAO_LOAD_BCB_SECRET=$(head -c 48 /dev/urandom | base64 | tr -d '\n/+=' | head -c 40)
export RAZAO_LOAD_BCB_SECRET
grep -q '^endpoints:$' scripts/dev.yaml || die "scripts/dev.yaml has no top-level 'endpoints:' line"
awk '{ print } /^endpoints:$/ {
	print "  - name: bcbpix          # the bcb-memory scenario of scripts/load"
	print "    scheme: bcb-pix"
	print "    merchant: loja-dev"
	print "    secrets_env: [RAZAO_LOAD_BCB_SECRET]"
}' scripts/dev.yaml >"$WORK/load.yaml"
# The webhooks scenario's receivers are on 127.0.0.1, which razao refuses
# to send to unless told otherwise.
grep -q '^webhooks:' "$WORK/load.yaml" || printf 'webhooks:\n  allow_private_targets: true   # the webhooks scenario of scripts/load\n  allow_http_targets: true\n' >>"$WORK/load.yaml"
# start_server CONFIG: razao serve with CONFIG on a free loopback port;
# sets SERVER_PID and URL. RAZAO_ALLOW_ROOT: the load runs on a
# development machine, often as root.
start_server() {
	DATABASE_URL=$LOAD_URL RAZAO_CONFIG=$1 RAZAO_LISTEN=127.0.0.1:0 RAZAO_ADMIN_LISTEN=127.0.0.1:0 RAZAO_ALLOW_ROOT=1 \
		bin/razao serve -migrate=false >>"$OUTDIR/serve.out" 2>"$OUTDIR/serve.log" &
	SERVER_PID=$!
	URL=""
	for _ in $(seq 1 60); do
		# The listening line is in the JSON log stream (stderr).
		URL=$(grep '"msg":"razao listening"' "$OUTDIR/serve.log" 2>/dev/null | grep -o 'http://127\.0\.0\.1:[0-9]*' | head -1 || true)
		[[ -n $URL ]] && break
		kill -0 "$SERVER_PID" 2>/dev/null || { cat "$OUTDIR/serve.log" >&2; die "razao serve exited"; }
		sleep 0.5
	done
	[[ -n $URL ]] || die "razao serve did not report its address within 30 s"
	echo "razao (pid $SERVER_PID) serving at $URL"
}
start_server "$WORK/load.yaml"

vacuum_if_off
[[ $AUTOVACUUM == off ]] && echo "note: autovacuum is off on this server: the tables razao and pgbench write are vacuumed before each measurement, as autovacuum would"
step "load: scenario all (distinct, flood, sse, fanout, duplicate-storm, mixed, webhooks), n=$N c=$C storm=$STORM streams=$STREAMS scheme=$SCHEME (cap $DURATION)"
load_rc=0
RAZAO_API_TOKEN=$API_TOKEN timeout $((dur_s + 60)) "$WORK/load" -url "$URL" -scenario all -n "$N" -c "$C" -storm "$STORM" -scheme "$SCHEME" \
	-streams "$STREAMS" -flood-c "$FLOOD_C" \
	-duration "$DURATION" -json "$OUTDIR/results.jsonl" -database-url "$LOAD_URL" -server-pid "$SERVER_PID" || load_rc=$?

step "load: bcb-memory, one bcb-pix callback of $BCB_ITEMS items (razao's peak RSS and answer time)"
RAZAO_API_TOKEN=$API_TOKEN timeout $((dur_s + 60)) "$WORK/load" -url "$URL" -scenario bcb-memory -bcb-items "$BCB_ITEMS" -c "$C" \
	-duration "$DURATION" -json "$OUTDIR/results.jsonl" -database-url "$LOAD_URL" -server-pid "$SERVER_PID" || load_rc=$?

# jfield LINE KEY: the first value of KEY in a JSON line of the load tool.
jfield() { grep -o "\"$2\":[^,}]*" <<<"$1" | head -1 | cut -d: -f2- | tr -d '"'; }
# The machine's speed drifts by 10-25 % between minutes, so one sse run
# beside one distinct run minutes before can say little: sse is also
# measured in SSE_ROUNDS rounds of distinct then sse, one right after the
# other, for ratios per round.
: >"$OUTDIR/sse-rounds.txt"
for r in $(seq 1 "$SSE_ROUNDS"); do
	step "sse round $r of $SSE_ROUNDS: razao distinct (n=$N c=$C), then sse ($STREAMS streams)"
	for sc in distinct sse; do
		vacuum_if_off
		RAZAO_API_TOKEN=$API_TOKEN timeout $((dur_s + 60)) "$WORK/load" -url "$URL" -scenario "$sc" -n "$N" -c "$C" -scheme "$SCHEME" \
			-streams "$STREAMS" -duration "$DURATION" -json "$OUTDIR/sse-round-$r.jsonl" -database-url "$LOAD_URL" -server-pid "$SERVER_PID" \
			>"$OUTDIR/sse-round-$r-$sc.txt" 2>&1 || { tail -n 20 "$OUTDIR/sse-round-$r-$sc.txt" >&2; die "sse round $r: $sc failed"; }
	done
	d=$(grep '"scenario":"distinct"' "$OUTDIR/sse-round-$r.jsonl")
	e=$(grep '"scenario":"sse"' "$OUTDIR/sse-round-$r.jsonl")
	echo "$r $(jfield "$d" applied_per_s) $(jfield "$d" p99) $(jfield "$e" applied_per_s) $(jfield "$e" p99) $(jfield "$e" catch_up_s)" | tee -a "$OUTDIR/sse-rounds.txt"
done

# Webhook rounds: the issue's measure of razao's own webhooks, at an
# offered WEBHOOK_RATE payments a second (an open load, -rate) for
# WEBHOOK_SECONDS: distinct, then webhooks (WEBHOOK_SUBSCRIBERS receivers
# of every event, two events a payment), then webhooks again on a razao
# restarted with webhooks.max_deliveries_per_second: WEBHOOK_CAP (the
# deliveries fall behind during the payments and catch up after, so the
# intake keeps its rate on a machine the receivers share), one right after
# the other, for ratios per round.
: >"$OUTDIR/webhook-rounds.txt"
wn=$((WEBHOOK_RATE * WEBHOOK_SECONDS))
cp "$WORK/load.yaml" "$WORK/load-capped.yaml"
awk -v cap="$WEBHOOK_CAP" '{ print } /^webhooks:$/ { print "  max_deliveries_per_second: " cap "   # the capped webhook rounds of scripts/load" }' \
	"$WORK/load.yaml" >"$WORK/load-capped.yaml"
restart_server() {
	stop_server
	mv "$OUTDIR/serve.log" "$OUTDIR/serve-$(date +%H%M%S).log"
	start_server "$1"
}
for r in $(seq 1 "$WEBHOOK_ROUNDS"); do
	step "webhook round $r of $WEBHOOK_ROUNDS: distinct, webhooks, webhooks capped at $WEBHOOK_CAP attempts/s ($wn payments at $WEBHOOK_RATE/s, $WEBHOOK_SUBSCRIBERS subscribers)"
	for sc in distinct webhooks webhooks-capped; do
		vacuum_if_off
		[[ $sc == webhooks-capped ]] && restart_server "$WORK/load-capped.yaml"
		RAZAO_API_TOKEN=$API_TOKEN timeout $((dur_s + 180)) "$WORK/load" -url "$URL" -scenario "${sc%-capped}" -n "$wn" -c "$C" -rate "$WEBHOOK_RATE" \
			-subscribers "$WEBHOOK_SUBSCRIBERS" -scheme "$SCHEME" -duration "$DURATION" -json "$OUTDIR/webhook-round-$r-$sc.jsonl" \
			-database-url "$LOAD_URL" -server-pid "$SERVER_PID" >"$OUTDIR/webhook-round-$r-$sc.txt" 2>&1 ||
			{ tail -n 20 "$OUTDIR/webhook-round-$r-$sc.txt" >&2; die "webhook round $r: $sc failed"; }
		[[ $sc == webhooks-capped ]] && restart_server "$WORK/load.yaml"
	done
	d=$(cat "$OUTDIR/webhook-round-$r-distinct.jsonl")
	for sc in webhooks webhooks-capped; do
		w=$(cat "$OUTDIR/webhook-round-$r-$sc.jsonl")
		echo "$r $sc $(jfield "$d" applied_per_s) $(jfield "$w" applied_per_s) $(jfield "$d" p99) $(jfield "$w" p99) $(jfield "$w" webhook_lag_p50_ms) $(jfield "$w" webhook_lag_p99_ms) $(jfield "$w" webhook_catch_up_s)" |
			tee -a "$OUTDIR/webhook-rounds.txt"
	done
done

step "pgbench: scratch bench_* tables (copies of the tables, no ledger triggers)"
timeout 900 psql "$LOAD_URL" -X -q -v ON_ERROR_STOP=1 -f scripts/load/pgbench/setup.sql
checkpoint
ids=$(psql_load -At -F' ' -c "SELECT
	(SELECT id FROM accounts WHERE code = 'assets:cash'), (SELECT id FROM accounts WHERE code = 'income:revenue'),
	(SELECT id FROM accounts WHERE code = 'expenses:commission'),
	(SELECT id FROM accounts WHERE code = 'liabilities:commission-payable:pre-p1')")
read -r cash revenue commission payable <<<"$ids"

pgb() { # name script -> prints tps; full output in $OUTDIR/pgbench-name.txt
	local name=$1 script=$2
	timeout $((PGBENCH_SECONDS + 120)) pgbench -n -M prepared -c "$PGBENCH_CLIENTS" -j 2 -T "$PGBENCH_SECONDS" \
		-D nch="$PRELOAD" -D cash="$cash" -D revenue="$revenue" -D commission="$commission" -D payable="$payable" \
		-f "$script" "$LOAD_URL" >"$OUTDIR/pgbench-$name.txt" 2>&1 || { cat "$OUTDIR/pgbench-$name.txt" >&2; die "pgbench $name failed"; }
	grep -E '^(number of failed|latency average|tps)' "$OUTDIR/pgbench-$name.txt" | sed 's/^/    /' >&2
	grep -oE '^tps = [0-9.]+' "$OUTDIR/pgbench-$name.txt" | head -1 | cut -d' ' -f3
}
# The machine's speed drifts by 10-20 % from minute to minute, so razao and
# the pgbench transactions it is compared with are also measured in
# alternation, each round one right after the other, and the ratios are
# taken per round: to (a), the brief's posting transaction, whose half is
# the floor, and to (c), the SQL of one whole delivery.
: >"$OUTDIR/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
	step "round $r of $ROUNDS: razao distinct (n=$N c=$C), then pgbench (a) posting and (c) razao-like"
	vacuum_if_off
	RAZAO_API_TOKEN=$API_TOKEN timeout $((dur_s + 60)) "$WORK/load" -url "$URL" -scenario distinct -n "$N" -c "$C" -scheme "$SCHEME" \
		-duration "$DURATION" -json "$OUTDIR/round-$r.jsonl" -database-url "$LOAD_URL" -server-pid "$SERVER_PID" >"$OUTDIR/round-$r.txt" 2>&1 ||
		{ cat "$OUTDIR/round-$r.txt" >&2; die "round $r: the distinct scenario failed"; }
	acc=$(grep -o '"applied_per_s":[0-9.]*' "$OUTDIR/round-$r.jsonl" | head -1 | cut -d: -f2)
	[[ -n $acc ]] || die "round $r: no applied_per_s in the distinct scenario's report (see $OUTDIR/round-$r.txt)"
	tps_ra=$(pgb "posting_round$r" scripts/load/pgbench/posting.sql)
	tps_rc=$(pgb "razao_like_round$r" scripts/load/pgbench/razao_like.sql)
	echo "$r $acc $tps_ra $tps_rc" | tee -a "$OUTDIR/rounds.txt"
done

step "what razao logged during the load"
grep -o '"level":"[A-Z]*"' "$OUTDIR/serve.log" | sort | uniq -c || true
grep -o '"msg":"[^"]*"' "$OUTDIR/serve.log" | sort | uniq -c | sort -rn | head -10 || true
grep -m 5 '"level":"\(ERROR\|WARN\)"' "$OUTDIR/serve.log" | cut -c1-400 || true

step "inbox and divergences after the load (rows of this run only)"
psql_load -c "SELECT status, kind, count(*), count(*) FILTER (WHERE attempts > 1) AS retried
	FROM inbox WHERE charge_ref LIKE 'lt%' GROUP BY 1, 2 ORDER BY 1, 2"
psql_load -c "SELECT reason, count(*) FROM divergences GROUP BY 1"

step "razao verify (after the load)"
verify_rc=0
DATABASE_URL=$LOAD_URL timeout 600 bin/razao verify || verify_rc=$?

stop_server
vacuum_if_off

step "pgbench (a) posting tx: lock charge FOR UPDATE, 1 set + 2 postings, update charge; $PGBENCH_CLIENTS clients, ${PGBENCH_SECONDS}s"
tps_a=$(pgb posting scripts/load/pgbench/posting.sql)
step "pgbench (c) razao-like delivery: inbox insert + apply tx (2 sets, 4 postings, charge, outbox, grant, inbox update)"
tps_c=$(pgb razao_like scripts/load/pgbench/razao_like.sql)
# (b) last: it leaves its rows pending, and pending rows slow (c) down (see README).
step "pgbench (b) inbox INSERT ... ON CONFLICT DO NOTHING RETURNING; $PGBENCH_CLIENTS clients, ${PGBENCH_SECONDS}s"
tps_b=$(pgb inbox scripts/load/pgbench/inbox.sql)

# --- summary ----------------------------------------------------------------
step "summary"
printf '%-16s %9s %11s %10s %9s %9s %9s %6s  %s\n' scenario "req/s" "accepted/s" "applied/s" "p50 ms" "p99 ms" "max ms" pass statuses
distinct_acc=""
if [[ -s $OUTDIR/results.jsonl ]]; then
	while IFS= read -r line; do
		sc=$(jfield "$line" scenario)
		statuses=$(grep -o '"statuses":{[^}]*}' <<<"$line" | cut -d: -f2- | tr -d '{}"')
		printf '%-16s %9s %11s %10s %9s %9s %9s %6s  %s\n' "$sc" "$(jfield "$line" requests_per_s)" "$(jfield "$line" accepted_per_s)" "$(jfield "$line" applied_per_s)" \
			"$(jfield "$line" p50)" "$(jfield "$line" p99)" "$(jfield "$line" max)" "$(jfield "$line" pass)" "$statuses"
		[[ $sc == distinct ]] && distinct_acc=$(jfield "$line" applied_per_s) && distinct_p99=$(jfield "$line" p99)
		[[ $sc == flood ]] && flood_acc=$(jfield "$line" applied_per_s) && flood_p99=$(jfield "$line" p99)
		[[ $sc == sse ]] && sse_acc=$(jfield "$line" applied_per_s) && sse_p99=$(jfield "$line" p99) &&
			sse_line="sse: each stream was sent $(jfield "$line" stream_kb_per_s) kB/s during the payments; the last had every event $(jfield "$line" catch_up_s) s after the last payment (razao's budget for all streams: events.max_bytes_per_second)"
		[[ $sc == fanout ]] && fanout_acc=$(jfield "$line" applied_per_s) && fanout_p99=$(jfield "$line" p99)
		[[ $sc == webhooks ]] && webhooks_acc=$(jfield "$line" applied_per_s) && webhooks_p99=$(jfield "$line" p99) &&
			webhooks_line="webhooks: $(jfield "$line" webhook_subscribers) subscribers received $(jfield "$line" webhook_deliveries) deliveries; from an event's creation to the subscriber's 200: p50 $(jfield "$line" webhook_lag_p50_ms) ms, p99 $(jfield "$line" webhook_lag_p99_ms) ms, max $(jfield "$line" webhook_lag_max_ms) ms; the last had every event $(jfield "$line" webhook_catch_up_s) s after the last payment (target: confirmed/s within 10 % of distinct's)"
		if [[ $sc == bcb-memory ]]; then
			bcb_line="bcb-memory: $(jfield "$line" items) items, $(jfield "$line" body_bytes) bytes: answered $(jfield "$line" code) in $(jfield "$line" answer_ms) ms, razao's peak RSS $(jfield "$line" peak_rss_mb_until_answer) MB until the answer, $(jfield "$line" peak_rss_mb) MB until applied (from $(jfield "$line" rss_before_mb) MB; target < 64 MB, < 1 s)"
		fi
	done <"$OUTDIR/results.jsonl"
fi
if [[ -n ${distinct_acc:-} ]]; then
	echo
	echo "beside the plain run (distinct), same run, same n and c (targets: within 1.5x; fanout is"
	echo "sse's bytes written by the load tool itself, no razao in it: what the machine alone loses to them):"
	for sc in flood sse fanout webhooks; do
		acc_v=${sc}_acc p99_v=${sc}_p99
		[[ -n ${!acc_v:-} ]] || continue
		awk -v name="$sc" -v a="${!acc_v}" -v p="${!p99_v}" -v da="$distinct_acc" -v dp="$distinct_p99" 'BEGIN {
			printf "  %-6s confirmed %8.1f/s (distinct %8.1f/s, ratio %.2f)   p99 %7.2f ms (distinct %7.2f ms, ratio %.2f)\n", name, a, da, (da > 0 ? a / da : 0), p, dp, (dp > 0 ? p / dp : 0)
		}'
	done
fi
[[ -z ${sse_line:-} ]] || { echo; echo "$sse_line"; }
[[ -z ${webhooks_line:-} ]] || { echo; echo "$webhooks_line"; }
if [[ -s $OUTDIR/webhook-rounds.txt ]]; then
	echo
	echo "webhook rounds: $WEBHOOK_SUBSCRIBERS subscribers of every event, payments offered at $WEBHOOK_RATE/s (target: confirmed/s within 10 % of distinct's):"
	awk '{ printf "  round %s %-15s confirmed %7.1f/s (distinct %7.1f/s, ratio %.2f)  answer p99 %7.2f ms (distinct %6.2f)  commit to 200: p50 %8.1f ms, p99 %8.1f ms; all %s s after the last payment\n", $1, $2, $4, $3, ($3 > 0 ? $4 / $3 : 0), $6, $5, $7, $8, $9 }' "$OUTDIR/webhook-rounds.txt"
fi
[[ -z ${bcb_line:-} ]] || { echo; echo "$bcb_line"; }
echo
printf 'pgbench (a) posting tx          %10s tx/s\n' "$tps_a"
printf 'pgbench (b) inbox insert        %10s tx/s\n' "$tps_b"
printf 'pgbench (c) razao-like delivery %10s deliveries/s\n' "$tps_c"
if [[ -n $distinct_acc ]]; then
	awk -v r="$distinct_acc" -v a="$tps_a" -v b="$tps_b" -v c="$tps_c" 'BEGIN {
		printf "razao confirmed deliveries/s (distinct) %.1f\n", r
		printf "  / pgbench (a) posting tx/s        = %.3f\n", r / a
		printf "  / pgbench (b) inbox insert/s      = %.3f\n", r / b
		printf "  / pgbench (c) razao-like/s        = %.3f\n", r / c
	}'
fi
median_ratio=null
median_ratio_a=null
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if [[ -s $OUTDIR/sse-rounds.txt ]]; then
	echo
	echo "sse rounds: razao distinct, then sse ($STREAMS streams), one right after the other (targets: confirmed/s at least 1/1.5 of distinct's, p99 at most 1.5 times)"
	awk '{ printf "  round %s  distinct %8.1f/s p99 %6.2f ms   sse %8.1f/s p99 %6.2f ms (caught up %s s after)   ratios %.2f, %.2f\n", $1, $2, $3, $4, $5, $6, $4 / $2, $5 / $3 }' "$OUTDIR/sse-rounds.txt"
	echo "  median sse/distinct confirmed/s = $(awk '{ print $4 / $2 }' "$OUTDIR/sse-rounds.txt" | median)   p99 = $(awk '{ print $5 / $3 }' "$OUTDIR/sse-rounds.txt" | median)"
fi
if [[ -s $OUTDIR/rounds.txt ]]; then
	echo
	echo "alternating rounds: razao distinct (confirmed/s) vs pgbench (a) posting and (c) razao-like, one right after the other"
	awk '{ printf "  round %s  razao %8.1f/s  (a) %8.1f/s  ratio %.3f  (c) %8.1f/s  ratio %.3f\n", $1, $2, $3, $2 / $3, $4, $2 / $4 }' "$OUTDIR/rounds.txt"
	median_ratio_a=$(awk '{ print $2 / $3 }' "$OUTDIR/rounds.txt" | median)
	median_ratio=$(awk '{ print $2 / $4 }' "$OUTDIR/rounds.txt" | median)
	echo "  median ratio razao / pgbench (a) = $median_ratio_a   (the floor is 0.5)"
	echo "  median ratio razao / pgbench (c) = $median_ratio"
fi
printf '{"preload":%s,"n":%s,"c":%s,"pgbench_clients":%s,"pgbench_seconds":%s,"pgbench_posting_tps":%s,"pgbench_inbox_tps":%s,"pgbench_razao_like_tps":%s,"razao_distinct_applied_per_s":%s,"rounds":%s,"median_round_ratio_posting":%s,"median_round_ratio_razao_like":%s}\n' \
	"$PRELOAD" "$N" "$C" "$PGBENCH_CLIENTS" "$PGBENCH_SECONDS" "${tps_a:-null}" "${tps_b:-null}" "${tps_c:-null}" "${distinct_acc:-null}" \
	"$ROUNDS" "$median_ratio_a" "$median_ratio" | tee -a "$OUTDIR/results.jsonl"

((verify_rc == 0)) || die "razao verify found a breach after the load (exit $verify_rc)"
((load_rc == 0)) || die "a load scenario failed (exit $load_rc): see the VIOLATION lines above"
echo "all scenarios passed; ledger verified"
