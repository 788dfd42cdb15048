#!/usr/bin/env bash
# A registry-sized study end to end (docs/EXPERIMENTS.md, "A registry-sized study"):
# generate a synthetic registry whose best row is known by construction
# (integration/registry_test.go), start `curator serve` over it, run a default study
# with `modeler run` on loopback, and report each side's wall time and peak resident
# memory and CPU time (GNU time; CPU seconds, user + system, say more than wall times on a
# loaded machine), where the time went (from the curator's log), and what the study
# recommended judged by its true value (`curator results`).
#
#   scripts/registry.sh [ROWS]        ROWS defaults to 10000000
#
# Environment (all optional):
#   PRIVBO_BIN             where the curator and modeler binaries are [.bin]
#   PRIVBO_REGISTRY_SEED   the table's seed [1]
#   PRIVBO_REGISTRY_DATA   a directory already holding registry.csv, registry.schema.csv
#                          and registry.truth (from an earlier run): no generation
#   PRIVBO_REGISTRY_MODELER_ARGS  more `modeler run` flags (e.g. --iterations 20)
#   PRIVBO_REGISTRY_KEEP   a directory to copy the logs and timings into
# Big runs share a machine's memory: run it under `flock LOCKFILE scripts/registry.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
bin=${PRIVBO_BIN:-.bin}
seed=${PRIVBO_REGISTRY_SEED:-1}
[ -x /usr/bin/time ] || { echo "registry.sh: needs GNU time (/usr/bin/time; Debian package time)" >&2; exit 1; }
work=$(mktemp -d -t privbo-registry.XXXXXX)
timer_pid=""
cleanup() {
  if [ -n "$timer_pid" ]; then
    kill -TERM "$(ps -o pid= --ppid "$timer_pid")" 2>/dev/null || true
    wait "$timer_pid" 2>/dev/null || true
  fi
  if [ -n "${PRIVBO_REGISTRY_KEEP:-}" ]; then
    mkdir -p "$PRIVBO_REGISTRY_KEEP" && cp "$work"/*.log "$work"/*.time "$work"/*.out "$PRIVBO_REGISTRY_KEEP"/ 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
now() { date +%s.%N; }

data=${PRIVBO_REGISTRY_DATA:-}
if [ -z "$data" ]; then
  data=$work/data
  mkdir -p "$data"
  echo "== generating $rows rows (seed $seed) into a temporary directory"
  t0=$(now)
  PRIVBO_REGISTRY_DIR=$data PRIVBO_REGISTRY_ROWS=$rows PRIVBO_REGISTRY_SEED=$seed \
    go test -run '^$' -bench '^BenchmarkRegistryGenerate$' -benchtime 1x ./integration >"$work/generate.out"
  echo "   generated in $(awk "BEGIN { printf \"%.4g\", $(now) - $t0 }") s (with the test binary's build): $(grep -o '[0-9.]* rows/s' "$work/generate.out")"
fi
truth() { sed -n "s/^$1=//p" "$data/registry.truth"; }
[ "$(truth rows)" = "$rows" ] || { echo "registry.sh: $data holds $(truth rows) rows, not $rows" >&2; exit 1; }

echo "== starting the curator over $rows rows"
start=$(now)
/usr/bin/time -v -o "$work/curator.time" "$bin/curator" serve \
  --data "$data/registry.csv" --target response --dataset-id registry --schema "$data/registry.schema.csv" \
  --output-epsilon 2.5 --budget-epsilon 10 \
  --listen 127.0.0.1:0 --addr-file "$work/addr" --state "$work/curator" 2>"$work/curator.log" &
timer_pid=$!
until [ -s "$work/addr" ]; do
  kill -0 "$timer_pid" 2>/dev/null || { echo "curator did not start:"; tail -5 "$work/curator.log"; exit 1; }
  sleep 0.2
done

echo "== running a default study against it"
# shellcheck disable=SC2086 # the extra flags are words
/usr/bin/time -v -o "$work/modeler.time" "$bin/modeler" run --curator "$(cat "$work/addr")" --identity registry \
  --json ${PRIVBO_REGISTRY_MODELER_ARGS:-} >"$work/modeler.out" 2>"$work/modeler.log"
end=$(now)
kill -TERM "$(ps -o pid= --ppid "$timer_pid")"
wait "$timer_pid" || true
timer_pid=""
rec=$(tail -1 "$work/modeler.out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["recommended_index"])')
"$bin/curator" results --state "$work/curator" --dataset-id registry --identity registry \
  --data "$data/registry.csv" --target response --schema "$data/registry.schema.csv" >"$work/results.out"

echo "== report"
python3 - "$work" "$start" "$end" "$rows" "$rec" "$(truth best_row)" "$(truth best_value)" "$(truth others_at_most)" <<'EOF'
import json, re, sys
from datetime import datetime
work, start, end, rows, rec, best, best_value, others = sys.argv[1:]
start, end = float(start), float(end)

def gnu_time(side):
    t = open(f"{work}/{side}.time").read()
    rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 2**20
    cpu = sum(float(re.search(rf"{k} time \(seconds\): (\S+)", t).group(1)) for k in ("User", "System"))
    return rss, cpu

events = {}  # the first time of each message (of each rpc method), the last of Query
for line in open(f"{work}/curator.log"):
    try:
        e = json.loads(line)
    except ValueError:
        continue
    ts = datetime.fromisoformat(e["ts"].replace("Z", "+00:00")).timestamp()
    key = e["msg"] + ("/" + e["method"].rsplit("/", 1)[1] if "method" in e else "")
    events.setdefault(key, ts)
    if key == "rpc/Query":
        events["last query"] = ts
res = json.loads(open(f"{work}/modeler.out").read().splitlines()[-1])
steps = res["iterations"]
g = lambda k: events[k]
print(f"rows {int(rows)}, r {res['r']}, T {steps}")
crss, ccpu = gnu_time("curator")
mrss, mcpu = gnu_time("modeler")
print(f"end to end (curator start to the modeler's result): {end - start:.4g} s")
print(f"curator: load {g('dataset loaded') - start:.4g} s; release computed {g('projection computed and stored') - g('rpc/QuoteStudy'):.4g} s,"
      f" streamed {g('rpc/ReleaseProjection') - g('projection computed and stored'):.4g} s; peak RSS {crss:.4g} GiB, CPU {ccpu:.4g} s")
loop = g("last query") - g("rpc/Query")
print(f"modeler: {steps} queries in {loop:.4g} s after the first ({loop / max(steps - 1, 1):.4g} s per step, GP and query),"
      f" from the stream's end to the first query {g('rpc/Query') - g('rpc/ReleaseProjection'):.4g} s,"
      f" from the last query to the result {end - g('last query'):.4g} s; peak RSS {mrss:.4g} GiB, CPU {mcpu:.4g} s")
print(f"the GP's kept columns of V: {min(steps * int(rows) * 8, 2**30) / 2**30:.4g} GiB (the modeler's lazy GP keeps at most 1 GiB); the projection Z {res['r'] * int(rows) * 8 / 2**30:.4g} GiB")
row = None
for line in open(f"{work}/results.out"):
    f = line.split()
    if len(f) >= 6 and f[0].isdigit() and f[1] == rec:
        row = f
        break
if row is None:
    sys.exit(f"registry.sh: curator results does not list the recommended row {rec}")
print(f"recommended row {rec}: true response {row[2]}, rank {row[3]} of {int(rows)}, percentile {row[4]}, top 1%: {row[5]}")
print(f"known best row {best}: response {best_value} (every other row at most {others}); queried: {'yes' if int(best) in res['queried'] else 'no'}")
EOF
