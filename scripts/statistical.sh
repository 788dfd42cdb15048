#!/usr/bin/env bash
# make test's second pass: the statistical tests, those whose first statement is
# testrace.Statistical(t), which the race pass skips, run here without the race
# detector (see internal/testrace). Extra arguments go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each line: a package directory and a test name.
found=$(git ls-files '*_test.go' | xargs awk '
  /^func Test[A-Za-z0-9_]*\(/ { name = $2; sub(/\(.*/, "", name); next }
  /^\ttestrace\.Statistical\(t\)$/ { d = FILENAME; sub(/\/[^\/]*$/, "", d); print "./" d, name }')
if [ -z "$found" ]; then
  echo "statistical: no test calls testrace.Statistical" >&2
  exit 1
fi
names=$(cut -d' ' -f2 <<<"$found" | sort -u | paste -sd'|')
dirs=$(cut -d' ' -f1 <<<"$found" | sort -u)
# shellcheck disable=SC2086 # dirs is a list of package directories
exec go test -count=1 -timeout 20m "$@" -run "^($names)\$" $dirs
