#!/usr/bin/env bash
# Starts razao for a developer: with DATABASE_URL set it uses that database;
# without, it starts (or reuses) a private PostgreSQL in .pgdata/ through
# scripts/localpg.sh. Without RAZAO_CONFIG it serves the development
# endpoints of scripts/dev.yaml with secrets from .dev/secrets.env. Then it
# migrates and serves until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"

if [[ -z "${DATABASE_URL:-}" ]]; then
	echo "DATABASE_URL is not set: starting a local PostgreSQL in .pgdata/ (stop it with 'make pg-stop')" >&2
	DATABASE_URL="$(bash scripts/localpg.sh start)"
	export DATABASE_URL
fi
# Never print a password that may be in the URL.
echo "database: $(sed -E 's#://([^:@/]*):[^@/]*@#://\1:***@#' <<<"$DATABASE_URL")" >&2

if [[ -z "${RAZAO_CONFIG:-}" ]]; then
	export RAZAO_CONFIG=scripts/dev.yaml
	set -a
	# shellcheck disable=SC1090
	source "$(bash scripts/dev-secrets.sh)"
	set +a
	echo "config: scripts/dev.yaml, secrets in .dev/secrets.env (try 'make demo' in another terminal)" >&2
fi

mkdir -p bin .dev
go build -o bin/razao ./cmd/razao
bin/razao migrate >/dev/null
# A fresh admin token for this run, for make demo and your curl calls; the
# database keeps only its hash. Revoke old ones with bin/razao token revoke.
(umask 077; bin/razao token create -name "make run $(date -u +%FT%TZ)" -scope admin 2>/dev/null >.dev/api-token)
echo "API token (admin) in .dev/api-token: curl -H \"Authorization: Bearer \$(cat .dev/api-token)\" ..." >&2
exec bin/razao serve "$@"
