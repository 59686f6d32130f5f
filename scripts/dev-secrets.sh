#!/usr/bin/env bash
# Prints the path of .dev/secrets.env, creating it with fresh random
# secrets the first time: one secret per development endpoint.
# The file is ignored by git and readable by its owner only.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
file="$root/.dev/secrets.env"
if [[ ! -f "$file" ]]; then
	mkdir -p "$root/.dev"
	umask 077
	rnd() { head -c "$1" /dev/urandom | base64 | tr -d '\n/+=' | head -c "$2"; }
	{
		echo "RAZAO_DEV_HODLE_SECRET=$(rnd 48 40)"
		echo "RAZAO_DEV_STANDARD_SECRET=whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
		echo "RAZAO_DEV_ABACATEPAY_SECRET=$(rnd 64 48)"
	} >"$file"
	echo "created $file with fresh development secrets" >&2
fi
echo "$file"
