#!/usr/bin/env bash
# scripts/localpg.sh — run a private PostgreSQL server for razao.
#
# Used by `make run` when no DATABASE_URL is given, and by the Go test harness
# as a last-resort fallback (with a throwaway data dir).
#
# Usage: scripts/localpg.sh COMMAND
#   start   Make sure a cluster exists in $RAZAO_PGDATA and runs on
#           127.0.0.1:$RAZAO_PGPORT, create database $RAZAO_PGDB if missing,
#           then print the connection URL as the ONLY line on stdout:
#             postgres://postgres@127.0.0.1:PORT/DB?sslmode=disable
#           All other messages go to stderr. Idempotent: if the server is
#           already running it just prints the URL.
#   stop    Stop the server (fast shutdown). No-op if it is not running.
#   status  Print "running URL" or "stopped" on stdout; exit 0 if running,
#           3 if not (same convention as pg_ctl status).
#   url     Print the URL that `start` prints, without starting anything.
#   psql    Open psql on the database (extra arguments go to psql).
#
# Environment:
#   RAZAO_PGDATA     data dir (default: <project root>/.pgdata)
#   RAZAO_PGPORT     TCP port on 127.0.0.1 (default: 54329)
#   RAZAO_PGDB       database to create (default: razao)
#   RAZAO_PG_FAST=1  fsync, synchronous_commit and full_page_writes off: for
#                    throwaway test clusters only (a crash can corrupt data).
#                    Default is fsync on, because `make run` keeps real data.
#   RAZAO_PG_USER    (root only) OS user that owns and runs a NEW cluster.
#                    Default: `postgres` if it exists, else a system user
#                    `razao-pg` is created.
#   RAZAO_PG_BINDIR  PostgreSQL bin dir (default: `pg_config --bindir`, else
#                    the newest /usr/lib/postgresql/*/bin, else initdb on PATH)
#   RAZAO_PG_MODE    auto (default) | native | docker. auto = native binaries
#                    if found, else a `postgres:16` container if a Docker
#                    engine answers.
#
# Running as root: initdb and postgres refuse to run as root, so the data dir
# is chowned to an unprivileged user and the server tools run as that user
# (runuser). That user must be able to traverse every parent of the data dir.
# /work/... is 0755 and fine, but Go's t.TempDir() is 0700 root-owned: a
# caller must put the data dir under a directory it created with mode 0755
# (the Go harness does). This script checks it and says which dir is the
# problem instead of failing obscurely.
#
# Files: the server log is $RAZAO_PGDATA/server.log. The unix socket goes in
# the data dir itself (nothing connects through it: clients use TCP), or in
# /tmp when that path would exceed the 107-byte unix socket path limit.

set -euo pipefail

die()  { printf 'localpg: error: %s\n' "$*" >&2; exit 1; }
info() { printf 'localpg: %s\n' "$*" >&2; }

SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)
PROJECT_ROOT=$(dirname -- "$SCRIPT_DIR")

PGDATA_DIR=$(realpath -m -- "${RAZAO_PGDATA:-$PROJECT_ROOT/.pgdata}")
PORT=${RAZAO_PGPORT:-54329}
DB=${RAZAO_PGDB:-razao}
FAST=${RAZAO_PG_FAST:-0}
MODE=${RAZAO_PG_MODE:-auto}
CONTAINER="razao-pg-$PORT"
DOCKER_IMAGE=postgres:16

if ! [[ $PORT =~ ^[1-9][0-9]{0,4}$ ]] || ((PORT > 65535)); then
	die "RAZAO_PGPORT must be a TCP port number (1-65535), got '$PORT'"
fi
# The name goes into SQL and into the URL unescaped, so keep it plain.
[[ $DB =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] \
	|| die "RAZAO_PGDB must match [A-Za-z_][A-Za-z0-9_]*, got '$DB'"
# pg_ctl passes -o through /bin/sh; we single-quote paths there.
[[ $PGDATA_DIR != *[\'$'\n']* ]] || die "RAZAO_PGDATA must not contain quotes or newlines"
[[ $PGDATA_DIR != / ]] || die "RAZAO_PGDATA must not be /"

# Settings inherited from the caller's environment must not redirect our
# tools to some other server.
unset PGHOST PGHOSTADDR PGPORT PGDATABASE PGUSER PGPASSWORD PGPASSFILE \
	PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGDATA
export PGCONNECT_TIMEOUT=5

url_for() { printf 'postgres://postgres@127.0.0.1:%s/%s?sslmode=disable\n' "$1" "$DB"; }

# ---------------------------------------------------------------- binaries --

BINDIR=""

# has_server_bins DIR: DIR holds a usable server toolchain.
has_server_bins() { [[ -x $1/initdb && -x $1/pg_ctl && -x $1/postgres ]]; }

find_bindir() {
	local d v
	if [[ -n ${RAZAO_PG_BINDIR:-} ]]; then
		if ! has_server_bins "$RAZAO_PG_BINDIR"; then
			info "RAZAO_PG_BINDIR=$RAZAO_PG_BINDIR has no initdb/pg_ctl/postgres"
			return 1
		fi
		BINDIR=$RAZAO_PG_BINDIR
		return 0
	fi
	# An existing cluster can only be run by its own major version.
	if [[ -r $PGDATA_DIR/PG_VERSION ]]; then
		v=$(<"$PGDATA_DIR/PG_VERSION")
		if has_server_bins "/usr/lib/postgresql/$v/bin"; then
			BINDIR=/usr/lib/postgresql/$v/bin
			return 0
		fi
	fi
	# pg_config may come from libpq-dev without a server: check for initdb.
	if command -v pg_config >/dev/null 2>&1; then
		d=$(pg_config --bindir 2>/dev/null || true)
		if [[ -n $d ]] && has_server_bins "$d"; then
			BINDIR=$d
			return 0
		fi
	fi
	for d in $(printf '%s\n' /usr/lib/postgresql/*/bin | sort -rV); do
		if has_server_bins "$d"; then
			BINDIR=$d
			return 0
		fi
	done
	if d=$(command -v initdb 2>/dev/null); then
		d=$(dirname -- "$(realpath -- "$d")")
		if has_server_bins "$d"; then
			BINDIR=$d
			return 0
		fi
	fi
	return 1
}

docker_ok() {
	command -v docker >/dev/null 2>&1 && timeout 30 docker info >/dev/null 2>&1
}

NO_PG_MSG="no PostgreSQL server binaries found (looked at \$RAZAO_PG_BINDIR, \`pg_config --bindir\`, /usr/lib/postgresql/*/bin and initdb on PATH) and no working Docker engine. Install PostgreSQL (Debian/Ubuntu: apt-get install postgresql) or set DATABASE_URL to an existing server."

resolve_mode() {
	case $MODE in
	native)
		find_bindir || die "$NO_PG_MSG"
		;;
	docker)
		docker_ok || die "RAZAO_PG_MODE=docker but \`docker info\` fails: no Docker engine available"
		;;
	auto)
		if find_bindir; then
			MODE=native
		elif docker_ok; then
			MODE=docker
			info "no local PostgreSQL binaries; using Docker image $DOCKER_IMAGE (container $CONTAINER)"
		else
			die "$NO_PG_MSG"
		fi
		;;
	*) die "RAZAO_PG_MODE must be auto, native or docker, got '$MODE'" ;;
	esac
	if [[ $MODE == native ]]; then
		PSQL_BIN=$BINDIR/psql
		[[ -x $PSQL_BIN ]] || PSQL_BIN=$(command -v psql) || die "psql not found (install postgresql-client)"
	fi
}

# ------------------------------------------------------------- run-as user --

# Empty RUN_USER = run the server tools as ourselves (non-root case).
RUN_USER=""

# choose_run_user [create]: when root, pick the unprivileged user that owns
# (or will own) the cluster; with "create", create a system user if needed.
choose_run_user() {
	((EUID == 0)) || return 0
	local owner=""
	if [[ -f $PGDATA_DIR/PG_VERSION ]]; then
		owner=$(stat -c %U -- "$PGDATA_DIR")
		# An existing cluster is run by whoever owns it.
		if [[ $owner != root && $owner != UNKNOWN ]]; then
			RUN_USER=$owner
			return 0
		fi
	fi
	if [[ -n ${RAZAO_PG_USER:-} ]]; then
		getent passwd "$RAZAO_PG_USER" >/dev/null || die "RAZAO_PG_USER=$RAZAO_PG_USER: no such user"
		[[ $RAZAO_PG_USER != root ]] || die "RAZAO_PG_USER must not be root (PostgreSQL refuses to run as root)"
		RUN_USER=$RAZAO_PG_USER
	elif getent passwd postgres >/dev/null; then
		RUN_USER=postgres
	else
		RUN_USER=razao-pg
		if ! getent passwd razao-pg >/dev/null; then
			[[ ${1:-} == create ]] || return 0
			info "creating system user razao-pg to own the cluster (PostgreSQL refuses to run as root)"
			useradd --system --user-group --no-create-home --home-dir /nonexistent \
				--shell /usr/sbin/nologin razao-pg
		fi
	fi
	command -v runuser >/dev/null 2>&1 || die "runuser (util-linux) is needed to run PostgreSQL as '$RUN_USER' from root"
}

# as_pg CMD...: run a server tool as RUN_USER. cd / so the tool does not
# complain about an unreadable cwd (e.g. /root); fd 9 (our lock) is closed
# so a started postmaster does not inherit and hold it forever.
as_pg() {
	if [[ -n $RUN_USER ]]; then
		(cd / && runuser -u "$RUN_USER" -- env LC_ALL=C "$@" 9<&-)
	else
		(cd / && env LC_ALL=C "$@" 9<&-)
	fi
}

# check_traversable: RUN_USER must be able to reach the data dir.
check_traversable() {
	[[ -n $RUN_USER ]] || return 0
	local parent d
	parent=$(dirname -- "$PGDATA_DIR")
	runuser -u "$RUN_USER" -- test -x "$parent" && return 0
	# Find the first directory on the way down that blocks it.
	d=/
	local IFS=/ part
	for part in ${parent#/}; do
		d=${d%/}/$part
		if ! runuser -u "$RUN_USER" -- test -x "$d"; then
			die "PostgreSQL runs as '$RUN_USER' (we are root and it refuses root), but '$RUN_USER' cannot enter $d (mode $(stat -c %A -- "$d"), owner $(stat -c %U -- "$d")). Put RAZAO_PGDATA under a directory that every user can traverse, e.g. one you created with mode 0755 (Go's t.TempDir() is 0700)."
		fi
	done
	die "'$RUN_USER' cannot enter $parent"
}

# prepare_datadir: create the data dir with the right owner and mode, and
# take a lock on it so concurrent `start`s (e.g. parallel test processes)
# do not race on initdb/start.
prepare_datadir() {
	(umask 022 && mkdir -p -- "$(dirname -- "$PGDATA_DIR")")
	mkdir -p -- "$PGDATA_DIR"
	check_traversable
	exec 9<"$PGDATA_DIR"
	if command -v flock >/dev/null 2>&1; then
		flock -w 300 9 || die "timed out waiting for the lock on $PGDATA_DIR (another localpg.sh running?)"
	fi
	if [[ ! -f $PGDATA_DIR/PG_VERSION ]] && [[ -n $(ls -A -- "$PGDATA_DIR") ]]; then
		die "$PGDATA_DIR exists, is not empty and is not a PostgreSQL data dir; refusing to touch it"
	fi
	if [[ -n $RUN_USER ]]; then
		if [[ $(stat -c %U -- "$PGDATA_DIR") != "$RUN_USER" ]]; then
			info "giving $PGDATA_DIR to user '$RUN_USER' (PostgreSQL refuses to run as root)"
			chown -R -- "$RUN_USER:" "$PGDATA_DIR"
		fi
	else
		[[ -O $PGDATA_DIR ]] || die "$PGDATA_DIR is owned by $(stat -c %U -- "$PGDATA_DIR"), not by you ($(id -un))"
	fi
	chmod 0700 -- "$PGDATA_DIR"
}

# ------------------------------------------------------------ native server --

pid_file_field() { sed -n "${1}p" "$PGDATA_DIR/postmaster.pid" 2>/dev/null; }

native_running() {
	[[ -f $PGDATA_DIR/postmaster.pid ]] || return 1
	as_pg "$BINDIR/pg_ctl" status -D "$PGDATA_DIR" >/dev/null 2>&1 || return 1
	# A killed postmaster that nobody reaped yet (zombie) still "exists".
	local pid state
	pid=$(pid_file_field 1)
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || true)
	[[ $state != Z ]]
}

# The port of the running server (it may differ from RAZAO_PGPORT if it was
# started with another one), else the configured port.
native_port() {
	local p=""
	if native_running; then p=$(pid_file_field 4); fi
	[[ $p =~ ^[0-9]+$ ]] && echo "$p" || echo "$PORT"
}

port_in_use() {
	# shellcheck disable=SC2016 # $1 expands in the inner bash
	timeout 3 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

native_initdb() {
	local out args=(-D "$PGDATA_DIR" -U postgres --auth=trust --encoding=UTF8 --locale=C)
	[[ $FAST == 1 ]] && args+=(--no-sync)
	info "initialising a new cluster in $PGDATA_DIR ($("$BINDIR/postgres" --version))"
	if ! out=$(as_pg "$BINDIR/initdb" "${args[@]}" 2>&1); then
		printf '%s\n' "$out" >&2
		die "initdb failed (output above)"
	fi
}

native_start() {
	local sockdir opts log=$PGDATA_DIR/server.log
	# Unix socket paths are limited to 107 bytes (sun_path).
	sockdir=$PGDATA_DIR
	if (($(printf '%s' "$sockdir/.s.PGSQL.$PORT" | wc -c) > 107)); then
		sockdir=/tmp
		info "data dir path too long for a unix socket; socket goes in /tmp"
	fi
	opts="-c listen_addresses=127.0.0.1 -p $PORT -k '$sockdir'"
	if [[ $FAST == 1 ]]; then
		opts+=" -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
	else
		opts+=" -c fsync=on"
	fi
	local note=""
	[[ $FAST == 1 ]] && note=", RAZAO_PG_FAST=1: fsync off"
	info "starting PostgreSQL on 127.0.0.1:$PORT (data $PGDATA_DIR, log $log$note)"
	if ! as_pg "$BINDIR/pg_ctl" start -D "$PGDATA_DIR" -l "$log" -w -t 60 -o "$opts" >&2; then
		[[ -f $log ]] && { info "last lines of $log:"; tail -n 25 -- "$log" >&2; }
		die "PostgreSQL did not start"
	fi
}

# ensure_db PSQLCMD...: create $DB unless it exists. PSQLCMD connects as
# postgres to the maintenance database.
ensure_db() {
	local exists
	exists=$("$@" -Atc "SELECT 1 FROM pg_database WHERE datname = '$DB'" </dev/null) \
		|| die "cannot connect to the server to check database '$DB'"
	[[ $exists == 1 ]] && return 0
	info "creating database $DB"
	"$@" -qc "CREATE DATABASE \"$DB\"" </dev/null >&2 || die "could not create database '$DB'"
}

cmd_start_native() {
	choose_run_user create
	prepare_datadir
	local port
	if native_running; then
		port=$(native_port)
		[[ $port == "$PORT" ]] || info "warning: already running on port $port, not $PORT (stop it to change the port)"
	else
		# Check the port before initdb, so a busy port leaves nothing behind.
		if port_in_use "$PORT"; then
			die "127.0.0.1:$PORT is already in use by another process; set RAZAO_PGPORT to a free port"
		fi
		[[ -f $PGDATA_DIR/PG_VERSION ]] || native_initdb
		native_start
		port=$PORT
	fi
	ensure_db "$PSQL_BIN" -X -w -v ON_ERROR_STOP=1 -h 127.0.0.1 -p "$port" -U postgres -d postgres
	url_for "$port"
}

cmd_stop_native() {
	if [[ ! -f $PGDATA_DIR/PG_VERSION ]]; then
		info "no cluster in $PGDATA_DIR; nothing to stop"
		return 0
	fi
	choose_run_user
	if native_running; then
		info "stopping PostgreSQL (data $PGDATA_DIR)"
		as_pg "$BINDIR/pg_ctl" stop -D "$PGDATA_DIR" -m fast -w -t 60 >&2
	else
		info "not running (data $PGDATA_DIR)"
	fi
}

cmd_status_native() {
	[[ -f $PGDATA_DIR/PG_VERSION ]] && choose_run_user
	if [[ -f $PGDATA_DIR/PG_VERSION ]] && native_running; then
		echo "running $(url_for "$(native_port)")"
		info "data $PGDATA_DIR, pid $(pid_file_field 1), log $PGDATA_DIR/server.log"
		return 0
	fi
	echo "stopped"
	[[ -f $PGDATA_DIR/PG_VERSION ]] || info "no cluster in $PGDATA_DIR yet"
	return 3
}

# ------------------------------------------------------------ docker server --

docker_state() {
	docker inspect -f '{{.State.Running}}' "$CONTAINER" 2>/dev/null || echo absent
}

docker_psql() { docker exec -i "$CONTAINER" psql -X -w -v ON_ERROR_STOP=1 -h 127.0.0.1 -U postgres -d postgres "$@"; }

cmd_start_docker() {
	local args i
	case $(docker_state) in
	true) ;;
	false)
		info "starting existing container $CONTAINER"
		docker start "$CONTAINER" >/dev/null
		;;
	*)
		(umask 022 && mkdir -p -- "$PGDATA_DIR")
		if port_in_use "$PORT"; then
			die "127.0.0.1:$PORT is already in use by another process; set RAZAO_PGPORT to a free port"
		fi
		args=(postgres -c fsync=on)
		[[ $FAST == 1 ]] && args=(postgres -c fsync=off -c synchronous_commit=off -c full_page_writes=off)
		info "running container $CONTAINER ($DOCKER_IMAGE) on 127.0.0.1:$PORT, data in $PGDATA_DIR"
		docker run -d --name "$CONTAINER" \
			-p "127.0.0.1:$PORT:5432" \
			-e POSTGRES_HOST_AUTH_METHOD=trust \
			-e POSTGRES_DB="$DB" \
			-v "$PGDATA_DIR:/var/lib/postgresql/data" \
			"$DOCKER_IMAGE" "${args[@]}" >/dev/null
		;;
	esac
	# The image's first-run init uses a socket-only server, so TCP readiness
	# inside the container means the real server is up.
	for ((i = 0; i < 120; i++)); do
		docker exec "$CONTAINER" pg_isready -q -h 127.0.0.1 -U postgres >/dev/null 2>&1 && break
		if [[ $(docker_state) != true ]]; then
			docker logs --tail 25 "$CONTAINER" >&2 || true
			die "container $CONTAINER stopped (logs above)"
		fi
		sleep 1
	done
	((i < 120)) || die "container $CONTAINER did not become ready in 120s (see: docker logs $CONTAINER)"
	ensure_db docker_psql
	url_for "$PORT"
}

cmd_stop_docker() {
	if [[ $(docker_state) == absent ]]; then
		info "no container $CONTAINER; nothing to stop"
		return 0
	fi
	info "stopping and removing container $CONTAINER (data stays in $PGDATA_DIR)"
	docker stop "$CONTAINER" >/dev/null
	docker rm "$CONTAINER" >/dev/null
}

cmd_status_docker() {
	if [[ $(docker_state) == true ]]; then
		echo "running $(url_for "$PORT")"
		return 0
	fi
	echo "stopped"
	return 3
}

# ------------------------------------------------------------------- main --

usage() {
	sed -n '2,/^$/p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

cmd=${1:-}
[[ $# -gt 0 ]] && shift
case $cmd in
start)
	resolve_mode
	"cmd_start_$MODE"
	;;
stop)
	resolve_mode
	"cmd_stop_$MODE"
	;;
status)
	resolve_mode
	"cmd_status_$MODE"
	;;
url)
	# Must work even where no server is installed (it starts nothing).
	if [[ $MODE != docker ]] && find_bindir; then
		choose_run_user
		if [[ -f $PGDATA_DIR/PG_VERSION ]]; then url_for "$(native_port)"; else url_for "$PORT"; fi
	else
		url_for "$PORT"
	fi
	;;
psql)
	resolve_mode
	if [[ $MODE == docker ]]; then
		exec docker exec -it "$CONTAINER" psql -h 127.0.0.1 -U postgres -d "$DB" "$@"
	fi
	[[ -f $PGDATA_DIR/PG_VERSION ]] && choose_run_user
	exec "$PSQL_BIN" "$(url_for "$(native_port)")" "$@"
	;;
-h | --help | help) usage ;;
*)
	[[ -z $cmd ]] || info "unknown command '$cmd'"
	usage
	;;
esac
