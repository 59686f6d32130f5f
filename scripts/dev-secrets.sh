#!/usr/bin/env bash
# Prints the path of .dev/secrets.env, creating it with fresh random
# secrets the first time: one secret per development endpoint. A variable
# a newer scripts/dev.yaml needs and an older file lacks is appended.
# The file is ignored by git and readable by its owner only.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
file="$root/.dev/secrets.env"
mkdir -p "$root/.dev"
umask 077
[[ -f "$file" ]] || { : >"$file"; echo "creating $file with fresh development secrets" >&2; }
rnd() { head -c "$1" /dev/urandom | base64 | tr -d '\n/+=' | head -c "$2"; }
add() { # NAME VALUE: appended unless the file has NAME already
	grep -q "^$1=" "$file" || echo "$1=$2" >>"$file"
}
add RAZAO_DEV_HODLE_SECRET "$(rnd 48 40)"
add RAZAO_DEV_STANDARD_SECRET "whsec_$(head -c 32 /dev/urandom | base64 | tr -d '\n')"
add RAZAO_DEV_ABACATEPAY_SECRET "$(rnd 64 48)"
add RAZAO_DEV_PIX_SECRET "$(rnd 64 48)"
echo "$file"
