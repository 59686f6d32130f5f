#!/usr/bin/env bash
# Runs every Go fuzz target of the project for a bounded time each
# (FUZZTIME, default 30s) and prints the executions of each. A crash is
# saved by Go under the package's testdata/fuzz/ and makes this exit
# non-zero: commit that file, and it is a regression test from then on.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/go/bin:$PATH"
fuzztime="${FUZZTIME:-30s}"
status=0
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
while IFS=: read -r file name; do
	pkg="$(dirname "$file")"
	if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" -fuzzminimizetime 200x "$pkg" >"$log" 2>&1; then
		echo "ok    $name ($pkg): $(grep -o 'execs: [0-9]*' "$log" | tail -1) in $fuzztime"
	else
		echo "FAIL  $name ($pkg)"
		tail -30 "$log"
		status=1
	fi
done < <(grep -rHoE --include='*_test.go' '^func (Fuzz[A-Za-z0-9_]+)' . | sed -E 's/:func /:/' | sort)
exit $status
