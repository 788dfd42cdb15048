#!/usr/bin/env bash
# Runs every fuzz target of the repository for FUZZTIME each (default 60s), one after
# another, and prints the executions of each. New interesting inputs found are kept in
# Go's fuzz cache; a crasher is written to the package's testdata/fuzz/ by go test and
# must be committed with its fix. Usage: scripts/fuzz.sh [REGEXP-OF-TARGETS]
set -euo pipefail
cd "$(dirname "$0")/.."
FUZZTIME=${FUZZTIME:-60s}
# Minimising a new interesting input may take up to 60 s by default, during which the
# target does not fuzz; the RPC targets find dozens in a run.
FUZZMINIMIZETIME=${FUZZMINIMIZETIME:-10s}
only=${1:-.}
status=0
summary=()
while IFS= read -r line; do
  file=${line%%:*}
  target=$(sed -E 's/^.*func (Fuzz[A-Za-z0-9_]*).*/\1/' <<<"$line")
  [[ $target =~ $only ]] || continue
  pkg=./$(dirname "$file")
  echo "== $pkg $target for $FUZZTIME"
  if out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$FUZZTIME" -fuzzminimizetime "$FUZZMINIMIZETIME" "$pkg" 2>&1); then
    execs=$(grep -oE 'execs: [0-9]+' <<<"$out" | tail -1 | awk '{print $2}')
    summary+=("$(printf '%-40s %-22s %12s execs  ok' "$pkg" "$target" "${execs:-?}")")
  else
    echo "$out" | tail -20
    summary+=("$(printf '%-40s %-22s %12s        FAILED' "$pkg" "$target" "")")
    status=1
  fi
done < <(grep -rn --include='*_test.go' -E '^func Fuzz[A-Za-z0-9_]*\(' pkg cmd integration 2>/dev/null | sort)
printf '%s\n' "${summary[@]}"
exit $status
