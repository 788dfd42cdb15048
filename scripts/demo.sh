#!/usr/bin/env bash
# The end-to-end demo: a curator serving the shipped diabetes data and a modeler running
# PO-GP-UCB against it, both on loopback. The modeler looks for the patients with the
# highest disease progression while seeing only a private projection of the patients and
# private (noised) answers: the curator's default output privacy, Laplace noise on the
# progression range [0, 400] the public schema declares, charged once per modeler identity.
# The features are scaled with the schema's public bounds (examples/data/diabetes.schema.csv),
# never with a statistic of the data.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${PRIVBO_BIN:-.bin} # where the curator and modeler binaries are (make build puts them in .bin)
state=$(mktemp -d -t privbo-demo.XXXXXX)
# The curator's log outlives the demo (the state directory does not): it is where a
# person looks when something went wrong, and it holds no data row.
logdir=$(mktemp -d -t privbo-demo-log.XXXXXX)
log="$logdir/curator.log"
curator_pid=""
trap '[ -n "$curator_pid" ] && kill $curator_pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$state"' EXIT

echo "== creating a development CA, a server certificate and the vendor's client certificate"
"$bin/curator" dev-ca --out "$state/pki" --hosts 127.0.0.1,localhost --clients vendor-demo >/dev/null

echo "== starting the curator (hospital) on loopback with mutual TLS; its log: $log"
"$bin/curator" serve \
  --data examples/data/diabetes.csv --target progression --dataset-id diabetes \
  --schema examples/data/diabetes.schema.csv --output-epsilon 2.5 \
  --listen 127.0.0.1:0 --addr-file "$state/addr" --state "$state/curator" \
  --tls-cert "$state/pki/server.pem" --tls-key "$state/pki/server-key.pem" --client-ca "$state/pki/ca.pem" \
  --budget-epsilon 10 --budget-delta 1e-3 2>"$log" &
curator_pid=$!
for _ in $(seq 100); do [ -s "$state/addr" ] && break; sleep 0.1; done
[ -s "$state/addr" ] || { echo "curator did not start:"; cat "$log"; exit 1; }
addr=$(cat "$state/addr")

echo "== running the modeler (vendor, identity from its certificate) against $addr: r=5, ε=e², δ=1e-4, T=40"
echo "   (the answers are noised: Laplace with ε=2.5 on [0, 400], paid once by the vendor for all its answers)"
"$bin/modeler" run --curator "$addr" \
  --ca "$state/pki/ca.pem" --cert "$state/pki/vendor-demo.pem" --key "$state/pki/vendor-demo-key.pem" \
  --r 5 --epsilon 7.38905609893065 --delta 1e-4 --iterations 40 --quiet | tee "$state/modeler.out"

# Every stage of these pipelines reads all of its input: under pipefail a stage that stops
# early (head) would kill the writer with SIGPIPE and fail the demo at random.
# The CSV has CRLF line ends; awk strips the CR before splitting.
best=$(awk -F, '{ sub(/\r$/, "") } NR > 1 && (m == "" || $11 + 0 > m) { m = $11 + 0 } END { print m }' examples/data/diabetes.csv)
top1=$(awk -F, '{ sub(/\r$/, "") } NR > 1 { print $11 }' examples/data/diabetes.csv | sort -n -r | sed -n 5p)
echo "   (for reference: the highest progression in the data is $best; the top 1% is ≥ $top1)"
truth() { awk -F, -v r="$1" '{ sub(/\r$/, "") } NR == r + 2 { print $11 }' examples/data/diabetes.csv; }
row=$(sed -n 's/.*best row \([0-9]*\) with value.*/\1/p' "$state/modeler.out")
rec=$(sed -n 's/^recommended row \([0-9]*\):.*/\1/p' "$state/modeler.out")
echo "   (the hospital's view: the row with the highest noisy answer, $row, has the true progression $(truth "$row");"
echo "    the recommended row, $rec, has $(truth "$rec"))"

echo "== the curator's privacy ledger"
kill -TERM $curator_pid; wait $curator_pid || true
"$bin/curator" ledger --state "$state/curator" --dataset-id diabetes
echo "== the curator's log is kept at $log"
