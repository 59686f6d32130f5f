#!/usr/bin/env bash
# Starts razao for a developer: with DATABASE_URL set it uses that database;
# without, it starts (or reuses) a private PostgreSQL in .pgdata/ through
# scripts/localpg.sh. Without RAZAO_CONFIG it serves the development
# endpoints of scripts/dev.yaml with secrets from .dev/secrets.env. Then it
# migrates, keeps (or creates) a development admin token in .dev/api-token,
# writes .dev/env for another terminal, and serves until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if [[ -z "${DATABASE_URL:-}" ]]; then
	echo "DATABASE_URL is not set: starting a local PostgreSQL in .pgdata/ (stop it with 'make pg-stop')" >&2
	DATABASE_URL="$(bash scripts/localpg.sh start)"
	export DATABASE_URL
	local_pg=1
fi
# Never print a password that may be in the URL.
echo "database: $(sed -E 's#://([^:@/]*):[^@/]*@#://\1:***@#' <<<"$DATABASE_URL")" >&2

if [[ -z "${RAZAO_CONFIG:-}" ]]; then
	export RAZAO_CONFIG=scripts/dev.yaml
	dev_secrets="$(bash scripts/dev-secrets.sh)"
	set -a
	# shellcheck disable=SC1090
	source "$dev_secrets"
	set +a
	echo "config: scripts/dev.yaml, secrets in .dev/secrets.env" >&2
fi

mkdir -p bin .dev
# A first build compiles every dependency: say so, or it looks stuck.
gocache="$(go env GOCACHE)"
if [[ ! -x bin/razao || ! -d "$gocache" || -z "$(ls -A "$gocache" 2>/dev/null)" ]]; then
	echo "building bin/razao (first time: a few minutes on two cores)" >&2
fi
go build -buildvcs=auto -o bin/razao ./cmd/razao   # the commit, for razao version, even where GOFLAGS says -buildvcs=false
bin/razao migrate >/dev/null
# One development admin token, kept across runs while the database still
# knows it (the database keeps only its hash); a new one only when it is
# missing or revoked. Revoke old ones with bin/razao token revoke.
if [[ -s .dev/api-token ]] && bin/razao token check <.dev/api-token >/dev/null 2>&1; then
	echo "API token (admin): .dev/api-token, kept from an earlier run" >&2
else
	(umask 077; bin/razao token create -name "make run $(date -u +%FT%TZ)" -scope admin 2>/dev/null >.dev/api-token.new)
	mv .dev/api-token.new .dev/api-token
	echo "API token (admin): .dev/api-token, new" >&2
fi
# .dev/env gives another terminal what this one has: the token, the
# config, the development secrets and the local database.
(
	umask 077
	{
		echo "# Written by make run: in another terminal, source .dev/env"
		echo "export RAZAO_CONFIG=$(realpath "$RAZAO_CONFIG")"
		echo "export RAZAO_API_TOKEN=$(cat .dev/api-token)"
		if [[ "${dev_secrets:-}" != "" ]]; then
			sed -E 's/^([A-Z_]+=)/export \1/' "$dev_secrets"
		fi
		if [[ "${local_pg:-}" == 1 ]]; then
			echo "export DATABASE_URL=$DATABASE_URL"
		fi
		# razao psp send and make demo post to RAZAO_URL: where this serves.
		if [[ -n "${RAZAO_LISTEN:-}" ]]; then
			listen=$RAZAO_LISTEN
			[[ $listen == :* ]] && listen="127.0.0.1$listen"
			echo "export RAZAO_URL=http://$listen"
		fi
	} >.dev/env
)
echo "in another terminal: cd $(pwd) && source .dev/env   (then see README: 'A first payment')" >&2
# make run is a development machine's service, often run as root (a
# container, CI): serve refuses root unless told it is meant.
export RAZAO_ALLOW_ROOT=1
exec bin/razao serve "$@"
