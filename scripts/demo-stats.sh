#!/usr/bin/env bash
# demo-stats.sh [RUNS] [FILE]: runs scripts/demo.sh RUNS times (default 400; each run is a
# new curator, so a new private projection, fresh answer noise and a new random first row)
# and prints what its study's result is worth, judged by the true progression the
# hospital's view (curator results) prints: the figures of docs/EXPERIMENTS.md ("Result";
# "More informative answers" for the shipped recommendation), which the README quotes. The demos' output is kept in FILE (default: a new temporary
# file). PRIVBO_BIN says where the binaries are, as for the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-400}
out=${2:-$(mktemp -t privbo-demo-runs.XXXXXX)}
: >"$out"
for _ in $(seq "$runs"); do
  bash scripts/demo.sh >>"$out" 2>&1
  # Each demo keeps its curator's log for a person to read; these runs need none.
  log=$(sed -n 's|.*; its log: \(.*\)/curator.log$|\1|p' "$out" | tail -n 1)
  [ -n "$log" ] && rm -rf "$log"
done
echo "the output of the $runs demos: $out"

n=$(grep -c "^== the curator's privacy ledger" "$out")
# share PATTERN MATCH: how many of the lines PATTERN selects match MATCH, of the n runs.
share() {
  local k
  k=$(grep "$1" "$out" | grep -c "$2" || true)
  awk -v k="$k" -v n="$n" 'BEGIN { p = k / n; printf "%d/%d = %.1f%% ± %.1f%% (binomial s.e.)\n", k, n, 100 * p, 100 * sqrt(p * (1 - p) / n) }'
}
# percentiles PATTERN: the median (with its 95% confidence interval from the order
# statistics), quartiles and range of the percentiles on the lines PATTERN selects.
percentiles() {
  grep "$1" "$out" | sed 's/.*percentile \([0-9.]*\)%.*/\1/' | sort -n | awk '
    { v[NR] = $1 }
    END {
      h = 1.96 * sqrt(NR) / 2; lo = int(NR / 2 - h); hi = int(NR / 2 + h + 1)
      if (lo < 1) lo = 1; if (hi > NR) hi = NR
      printf "median %.1f%% (95%% CI %.1f%%–%.1f%%), quartiles %.1f%%–%.1f%%, range %.1f%%–%.1f%%\n",
        (v[int((NR + 1) / 2)] + v[int(NR / 2) + 1]) / 2, v[lo], v[hi], v[int(NR / 4 + 0.5)], v[int(3 * NR / 4 + 0.5)], v[1], v[NR]
    }'
}
echo "runs: $n"
echo "recommended row in the top 1%: $(share "the vendor's recommended row" "top 1%: yes")"
echo "recommended row's percentile: $(percentiles "the vendor's recommended row")"
echo "row of the highest noisy answer in the top 1%: $(share "the row of its highest noisy answer" "top 1%: yes")"
echo "row of the highest noisy answer's percentile: $(percentiles "the row of its highest noisy answer")"
echo "a top-1% row among the 40 queried: $(share "^best true outcome among them" "rows in the top 1%: [1-9]")"
# How well the posterior mean ± sd the modeler prints describes the recommended row's
# true progression.
awk '
  /^dataset diabetes: recommended row [0-9]+: posterior mean/ { split($0, p, "posterior mean "); split(p[2], a, " "); mean = a[1]; sd = a[3] }
  /the vendor.s recommended row [0-9]+: true progression/ {
    t = $0; sub(/.*true progression /, "", t); sub(/,.*/, "", t)
    k++; d = t - mean; bias += d; sq += d * d; sds += sd; if (d < 0) d = -d
    if (d <= sd) in1++; if (d <= 2 * sd) in2++
  }
  END {
    printf "recommended row: true − posterior mean %.1f on average (rms %.1f); mean posterior sd %.1f; true value within 1 sd in %.1f%%, within 2 sd in %.1f%% of runs\n",
      bias / k, sqrt(sq / k), sds / k, 100 * in1 / k, 100 * in2 / k
  }' "$out"
