#!/usr/bin/env bash
# Confirmed deliveries/s of this work tree against an earlier commit, in
# alternating rounds in one run on this machine: the way to show that a
# change kept the throughput, since the machine's speed drifts by 10-25 %
# from minute to minute and figures of different runs do not compare.
#
#   scripts/load/versus.sh COMMIT
#
# It builds razao at COMMIT (in a temporary git worktree) and here, creates
# two fresh databases on the PostgreSQL at $DATABASE_URL (else
# 127.0.0.1:5432; loopback only), migrates and pre-loads each with its own
# build's migrations and scripts/load/preload.sql, serves both on free
# loopback ports with their own scripts/dev.yaml and the dev secrets, and
# then runs ROUNDS rounds of this tree's load tool's `distinct` against
# each, old then new in odd rounds and new then old in even ones, each
# round ending with pgbench (a) on scratch copies of the new database's
# tables. It prints each round and the medians of new ÷ old and of each ÷
# pgbench (a), and the median CPU time per delivery of each side (razao,
# PostgreSQL, the whole machine). Both servers stay up throughout; each measurement starts
# with both databases vacuumed (autovacuum is off on this machine's
# server). At exit it stops both and drops both databases.
#
# Knobs (environment): ROUNDS=6 N=6000 C=8 PRELOAD=200000 PGBENCH_SECONDS=15.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH:/usr/lib/postgresql/15/bin"

ROUNDS=${ROUNDS:-6}
N=${N:-6000}
C=${C:-8}
PRELOAD=${PRELOAD:-200000}
PGBENCH_SECONDS=${PGBENCH_SECONDS:-15}
# shellcheck source=scripts/load/local.sh
source scripts/load/local.sh
int_in ROUNDS "$ROUNDS" 1 20
int_in N "$N" 1 100000
int_in C "$C" 1 1000
int_in PRELOAD "$PRELOAD" 1000 2000000
int_in PGBENCH_SECONDS "$PGBENCH_SECONDS" 1 120
(($# == 1)) || die "usage: scripts/load/versus.sh COMMIT"
OLD=$(git rev-parse --verify --quiet "$1^{commit}") || die "$1 is not a commit of this repository"
command -v pgbench >/dev/null || die "pgbench is missing (apt-get install postgresql-contrib)"

local_server "${DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}"

WORK=$(mktemp -d /tmp/razao-versus.XXXXXX)
PIDS=()
DBS=()
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	for d in "${DBS[@]}"; do psql "$ADMIN_URL" -X -q -c "DROP DATABASE IF EXISTS $d WITH (FORCE)" >/dev/null 2>&1 || echo "could not drop $d" >&2; done
	git worktree remove --force "$WORK/old" >/dev/null 2>&1 || true
	rm -rf "$WORK"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "### build: $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo '+changes') (new) and $(git rev-parse --short "$OLD") (old)"
git worktree add --detach --quiet "$WORK/old" "$OLD"
go build -o "$WORK/razao-new" ./cmd/razao
go build -o "$WORK/load" ./scripts/load
(cd "$WORK/old" && go build -o "$WORK/razao-old" ./cmd/razao)
grep -qE '^ +token ' <<<"$("$WORK/razao-old" help 2>&1 || true)" || die "razao at $1 has no 'token' command: too old for this script"

set -a
# shellcheck disable=SC1090
source "$(bash scripts/dev-secrets.sh)"
set +a

# serve SIDE TREE: a fresh database razao_versus_<pid>_SIDE, migrated and
# pre-loaded by that side's build, served on a free loopback port.
declare -A URL DBURL PID TOKEN
serve() {
	local side=$1 tree=$2 db="razao_versus_$$_$1"
	psql "$ADMIN_URL" -X -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db"
	DBS+=("$db")
	DBURL[$side]=$(db_url "$db")
	DATABASE_URL=${DBURL[$side]} timeout 120 "$WORK/razao-$side" migrate >/dev/null
	timeout 1200 psql "${DBURL[$side]}" -X -q -v ON_ERROR_STOP=1 -v n="$PRELOAD" -f "$tree/scripts/load/preload.sql" >/dev/null
	psql "${DBURL[$side]}" -X -q -c CHECKPOINT
	TOKEN[$side]=$(DATABASE_URL=${DBURL[$side]} timeout 60 "$WORK/razao-$side" token create -name versus -scope read,write 2>/dev/null)
	# RAZAO_ALLOW_ROOT: this machine runs the load as root; an older build
	# ignores the variable (a flag it would refuse).
	DATABASE_URL=${DBURL[$side]} RAZAO_CONFIG=$tree/scripts/dev.yaml RAZAO_LISTEN=127.0.0.1:0 RAZAO_ADMIN_LISTEN=127.0.0.1:0 RAZAO_ALLOW_ROOT=1 \
		"$WORK/razao-$side" serve -migrate=false >"$WORK/$side.out" 2>"$WORK/$side.log" &
	PID[$side]=$!
	PIDS+=("$!")
	for _ in $(seq 1 60); do
		# The listening line is in the JSON log (stderr); older builds
		# printed the address on stdout.
		URL[$side]=$({ grep -h '"msg":"razao listening"' "$WORK/$side.log" || true; cat "$WORK/$side.out"; } 2>/dev/null |
			grep -o 'http://127\.0\.0\.1:[0-9]*' | head -1 || true)
		[[ -n ${URL[$side]} ]] && break
		kill -0 "${PID[$side]}" 2>/dev/null || { tail -5 "$WORK/$side.log" >&2; die "razao ($side) exited"; }
		sleep 0.5
	done
	[[ -n ${URL[$side]} ]] || die "razao ($side) did not report its address within 30 s"
	echo "$side: $(git -C "$tree" rev-parse --short HEAD) at ${URL[$side]}, database $db ($PRELOAD charges pre-loaded)"
}
echo "### two databases, migrated and pre-loaded by their own builds"
serve old "$WORK/old"
serve new .

psql "${DBURL[new]}" -X -q -v ON_ERROR_STOP=1 -f scripts/load/pgbench/setup.sql >/dev/null
read -r cash revenue <<<"$(psql "${DBURL[new]}" -X -At -F' ' -c "SELECT
	(SELECT id FROM accounts WHERE code = 'assets:cash'), (SELECT id FROM accounts WHERE code = 'income:revenue')")"

vacuum() {
	local side
	for side in old new; do
		psql "${DBURL[$side]}" -X -q -c "VACUUM (ANALYZE) inbox, charges, access_grants, outbox, posting_sets, postings, divergences"
	done
}
# distinct SIDE ROUND: prints that side's confirmed deliveries/s.
distinct() {
	local side=$1 r=$2
	vacuum
	RAZAO_API_TOKEN=${TOKEN[$side]} timeout 600 "$WORK/load" -url "${URL[$side]}" -scenario distinct -n "$N" -c "$C" \
		-database-url "${DBURL[$side]}" -server-pid "${PID[$side]}" -json "$WORK/$side-$r.jsonl" >"$WORK/$side-$r.txt" 2>&1 ||
		{ tail -20 "$WORK/$side-$r.txt" >&2; die "round $r: distinct against $side failed"; }
	grep -o '"applied_per_s":[0-9.]*' "$WORK/$side-$r.jsonl" | head -1 | cut -d: -f2
}

echo "### $ROUNDS rounds: distinct (n=$N c=$C) against each, alternating which goes first, then pgbench (a) ${PGBENCH_SECONDS}s"
: >"$WORK/rounds.txt"
for r in $(seq 1 "$ROUNDS"); do
	if ((r % 2)); then
		o=$(distinct old "$r")
		n=$(distinct new "$r")
	else
		n=$(distinct new "$r")
		o=$(distinct old "$r")
	fi
	vacuum
	psql "${DBURL[new]}" -X -q -c "VACUUM (ANALYZE) bench_charges, bench_posting_sets, bench_postings"
	a=$(pgbench -n -M prepared -c 8 -j 2 -T "$PGBENCH_SECONDS" -D nch="$PRELOAD" -D cash="$cash" -D revenue="$revenue" \
		-f scripts/load/pgbench/posting.sql "${DBURL[new]}" 2>&1 | grep -oE '^tps = [0-9.]+' | cut -d' ' -f3)
	[[ -n $a ]] || die "round $r: pgbench (a) failed"
	echo "$r $o $n $a" >>"$WORK/rounds.txt"
	awk -v r="$r" -v o="$o" -v n="$n" -v a="$a" 'BEGIN {
		printf "  round %2d  old %8.1f/s  new %8.1f/s  new/old %.3f   pgbench (a) %8.1f/s  old/(a) %.3f  new/(a) %.3f\n", r, o, n, n / o, a, o / a, n / a
	}'
done
median() { sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "  median new/old     $(awk '{ print $3 / $2 }' "$WORK/rounds.txt" | median)"
echo "  median old/(a)     $(awk '{ print $2 / $4 }' "$WORK/rounds.txt" | median)"
echo "  median new/(a)     $(awk '{ print $3 / $4 }' "$WORK/rounds.txt" | median)"
# What each delivery cost in CPU, which moves far less with the machine's
# speed than the rates do: the medians over the rounds, per side.
# A run without the figures (no /proc) prints none: grep finding nothing
# must not end the script under pipefail.
cpu_us() {
	local v
	v=$(cat "$WORK/$1"-*.jsonl | grep -o "\"cpu_us_per_delivery\":{[^}]*}" | grep -oE "\"$2\":[0-9.]+" | cut -d: -f2 || true)
	[[ -z $v ]] || median <<<"$v"
}
for part in razao postgres machine; do
	o=$(cpu_us old "$part") n=$(cpu_us new "$part")
	[[ -n $o && -n $n && $o != 0 ]] || continue
	awk -v p="$part" -v o="$o" -v n="$n" 'BEGIN { printf "  CPU µs per delivery, %-8s old %6.0f  new %6.0f  new/old %.3f\n", p, o, n, n / o }'
done
