#!/usr/bin/env bash
# Runs the speed benchmarks — every row of the speed issue's table, plus the per-step,
# sampler, ledger and accountant figures the other issues ask for — and prints a
# benchstat summary. Results are saved under bench-results/ (git-ignored).
#
#   GP-UCB loop, n = 100,000 and 1,000,000    pkg/gpucb        BenchmarkLoop
#   one GP-UCB iteration, n = 10⁴ and 10⁵      pkg/gpucb        BenchmarkIteration
#   samplers, mechanisms, RDP accountant       pkg/dp           BenchmarkBernoulliExp … BenchmarkSubsampledGaussian10000Steps
#     (the exact discrete Gaussian at σ² = 2⁴⁰ and 2⁷², one and all cores:
#     BenchmarkDiscreteGaussian/{int64s,parallel}/…; target ≥ 2·10⁷ draws/s
#     on two cores at σ² = 2⁴⁰)
#   ledger charges per second                   pkg/ledger       BenchmarkChargeSQLite, BenchmarkChargePostgres
#   projection, n = 1,000,000, d = 50, r = 20  pkg/projection   BenchmarkProject
#   fresh Gaussian release, n = 10⁵ and 10⁶,   pkg/projection   BenchmarkProjectGaussianRelease
#     r = 20 (targets ≤ 0.3 s and ≤ 2 s)
#   projection stream over loopback gRPC       integration      BenchmarkProjectionStream
#   cached index queries over loopback         integration      BenchmarkCachedQueries
#   (not run here: a release's peak memory in a real curator, up to a 7.6 GiB matrix,
#   integration BenchmarkReleaseMemory; docs/EXPERIMENTS.md, "Release memory")
#
# Environment: BENCH_COUNT (default 6, the fewest samples for which benchstat gives a
# confidence interval) repetitions of each benchmark; BENCH_FILTER, an extended regular expression matched against the -bench patterns below, keeps only the
# benchmark functions it matches (e.g. BENCH_FILTER='Loop|Project\$').
# Compare two saved runs with: .bin/benchstat bench-results/OLD.txt bench-results/NEW.txt
set -euo pipefail
cd "$(dirname "$0")/.."
count=${BENCH_COUNT:-6}
filter=${BENCH_FILTER:-.}
benchstat=.bin/benchstat
if [ ! -x "$benchstat" ]; then
  echo "bench: $benchstat is missing; run ./scripts/install-deps.sh (make deps) first" >&2
  exit 1
fi
mkdir -p bench-results
out="bench-results/$(date -u +%Y%m%dT%H%M%SZ).txt"

# package  benchmark regex
targets=(
  "./pkg/gpucb|^BenchmarkLoop$|^BenchmarkIteration$"
  "./pkg/dp|^BenchmarkBernoulliExp$|^BenchmarkDiscreteLaplace$|^BenchmarkDiscreteGaussian$|^BenchmarkLaplaceMechanism$|^BenchmarkGaussianMechanism$|^BenchmarkExponential$|^BenchmarkSubsampledGaussian10000Steps$"
  "./pkg/ledger|^BenchmarkChargeSQLite$"
  "./pkg/ledger/pgledger|^BenchmarkChargePostgres$"
  "./pkg/projection|^BenchmarkProject$|^BenchmarkProjectGaussianRelease$"
  "./integration|^BenchmarkProjectionStream$|^BenchmarkCachedQueries$"
)
for t in "${targets[@]}"; do
  pkg=${t%%|*}
  pattern=${t#*|}
  # Keep only the benchmark functions that match BENCH_FILTER.
  sel=$(tr '|' '\n' <<<"$pattern" | grep -E -- "$filter" | paste -sd'|' || true)
  [ -n "$sel" ] || continue
  echo "bench: go test -run '^\$' -bench '$sel' -count $count $pkg" >&2
  go test -run '^$' -bench "$sel" -benchmem -count "$count" -timeout 60m "$pkg" | tee -a "$out"
done
echo
echo "bench: results saved in $out"
"$benchstat" "$out"
