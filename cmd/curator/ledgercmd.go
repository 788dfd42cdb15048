package main

import (
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/ledger"
)

// budgetFlags are the flags of the limits; 'curator ledger' compares them, when
// given, with the limits the curator recorded.
var budgetFlags = []string{"budget-epsilon", "budget-delta", "dataset-budget-epsilon", "dataset-budget-delta",
	"patient-budget-epsilon", "patient-budget-delta", "patient-dataset-budget-epsilon", "patient-dataset-budget-delta"}

// printLedger is 'curator ledger': every charge, and per neighbour relation each
// identity's spending and remainder against the limits the curator recorded when it
// last started (ledger.Ledger.RecordLimits).
func printLedger(args []string) error {
	fs := flag.NewFlagSet("curator ledger", flag.ContinueOnError)
	var (
		lf            ledgerFlags
		name, alias   string
		all           bool
		configFile    string
		asJSON, asCSV bool
		verify        bool
	)
	lf.register(fs)
	fs.StringVar(&name, "dataset-id", "", "dataset id, as the curator's --dataset-id (required; read from --config when not given)")
	fs.StringVar(&alias, "dataset", "", "the same as --dataset-id (older name of the flag)")
	fs.BoolVar(&all, "all", false, "list zero-cost releases too (by default they are only counted)")
	fs.StringVar(&configFile, "config", "", "the curator's configuration file: the ledger settings not given here are read from it and from PRIVBO_CURATOR_* variables, as serve reads them")
	fs.BoolVar(&asJSON, "json", false, "print one JSON document with exact figures (see README) instead of tables")
	fs.BoolVar(&asCSV, "csv", false, "print the budget per relation and identity as CSV with exact figures instead of tables")
	fs.BoolVar(&verify, "verify", false, "check that every total the ledger keeps (per identity and relation, per relation for the dataset, "+
		"the whole-patient ones and the stored bytes) equals the exact sum of its records, and print nothing else; fails when one does not")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: curator ledger --state DIR --dataset-id ID [--json | --csv | --verify] [--all]\n\n"+
			"First what one patient can lose (the whole-patient account, over every relation), then the\n"+
			"limits in force and their history, every charge, and the budget per relation. The limits are\n"+
			"those in force in the ledger (recorded by the curators that served it); budget flags (or --config)\n"+
			"are needed only for a ledger no curator of this version has served, and are compared with the\n"+
			"limits in force otherwise.")
		fs.PrintDefaults()
	}
	if err := cli.Parse(fs, args, os.Stdout); err != nil {
		return err
	}
	if asJSON && asCSV {
		return errors.New("curator ledger: give --json or --csv, not both")
	}
	// The ledger's settings, and the budget to compare with the recorded limits, as
	// serve reads them: the command line wins over the environment and --config.
	sf, full, err := serveSettings(fs, configFile)
	if err != nil {
		return err
	}
	if err := sf.lf.set.CheckFlags(full); err != nil {
		return err
	}
	given := map[string]bool{}
	full.Visit(func(f *flag.Flag) { given[f.Name] = true })
	name = cmp.Or(alias, sf.cfg.DatasetID)
	store, err := readLedger(fs, sf.lf, name)
	if err != nil {
		return err
	}
	ctx := context.Background()
	defer store.Close()

	if verify {
		return verifyLedger(ctx, os.Stdout, store, name)
	}
	lim, warnings, err := ledgerLimits(ctx, store, name, sf.lf.limits(), given)
	if err != nil {
		return err
	}
	history, err := store.LimitsHistory(ctx, name)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		fmt.Fprintln(os.Stderr, "curator ledger:", w)
	}
	entries, err := store.Entries(ctx, name)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		fmt.Fprintf(os.Stderr, "curator ledger: no records for dataset id %q: check --dataset-id (the curator's --dataset-id; ledgers written before it existed use the data file's name, or --name)\n", name)
	}
	rep, err := store.Report(ctx, name, lim.Limits)
	if err != nil {
		return err
	}
	rep, entries, evaluations := releasesOnly(rep, entries)
	switch {
	case asJSON:
		return writeLedgerJSON(os.Stdout, lim, history, warnings, rep, entries, evaluations)
	case asCSV:
		return writeLedgerCSV(os.Stdout, rep)
	}
	return writeLedgerText(os.Stdout, lim, history, rep, entries, evaluations, all)
}

// releasesOnly takes the curator's own records (its evaluations of rows, rows waiting
// for one; n of them) out of rep's counts, which the ledger keeps over every record, and
// out of entries, so that every count a view shows is of releases; rows left with no
// record go. They cost nothing, so no total changes.
func releasesOnly(rep ledger.Report, entries []ledger.Receipt) (_ ledger.Report, _ []ledger.Receipt, n int) {
	type key struct {
		id  string
		rel ledger.Relation
	}
	own := map[key]int{}
	out := entries[:0:0]
	for _, e := range entries {
		if e.Kind != ledger.KindEvaluation && e.Kind != ledger.KindPending {
			out = append(out, e)
			continue
		}
		own[key{"", ""}]++
		own[key{e.Identity, ""}]++
		for _, r := range e.Relation.CountsTowards() {
			own[key{"", r}]++
			own[key{e.Identity, r}]++
		}
	}
	if len(own) == 0 {
		return rep, entries, 0
	}
	rep.Patient.Dataset.Total.Charges -= int64(own[key{"", ""}])
	ids := rep.Patient.Identities[:0:0]
	for _, r := range rep.Patient.Identities {
		if r.Total.Charges -= int64(own[key{r.Identity, ""}]); r.Total.Charges > 0 || r.Reserved.Charges > 0 {
			ids = append(ids, r)
		}
	}
	rep.Patient.Identities = ids
	rels := rep.Relations[:0:0]
	for _, rr := range rep.Relations {
		rr.Dataset.Charges -= own[key{"", rr.Relation}]
		rows := rr.Identities[:0:0]
		for _, r := range rr.Identities {
			if r.Charges -= own[key{r.Identity, rr.Relation}]; r.Charges > 0 || r.Reservations > 0 {
				rows = append(rows, r)
			}
		}
		if rr.Identities = rows; rr.Dataset.Charges > 0 || rr.Dataset.Reservations > 0 {
			rels = append(rels, rr)
		}
	}
	rep.Relations = rels
	return rep, out, own[key{"", ""}]
}

// verifyLedger is 'curator ledger --verify': every total the charges keep against the
// exact sum of the records (ledger.Ledger.Verify).
func verifyLedger(ctx context.Context, out io.Writer, store ledgerView, dataset string) error {
	inc, err := store.Verify(ctx, dataset)
	if err != nil {
		return err
	}
	if len(inc) == 0 {
		fmt.Fprintf(out, "ledger consistent: every total of dataset %s (per identity and relation, per relation for the dataset, the whole-patient ones and the stored bytes) "+
			"equals the exact sum of its records\n", dataset)
		// Reservations are no totals, but an operator checking the ledger while the
		// curator computes releases should see that budget is held beyond them.
		rep, err := store.Report(ctx, dataset, store.Limits())
		if err != nil {
			return err
		}
		if held := reservedText(rep); held != "" {
			fmt.Fprintf(out, "live reservations, of releases being computed (not yet charged, in no total): %s\n", held)
		}
		return nil
	}
	for _, i := range inc {
		fmt.Fprintln(out, "INCONSISTENT:", i)
	}
	return fmt.Errorf("curator ledger: %d totals of dataset %s differ from the sum of their records; the ledger's records are the account, "+
		"so report this (its totals are recomputed from the records when the ledger is upgraded)", len(inc), dataset)
}

// ledgerView is what verifyLedger and ledgerLimits read of a *ledger.Ledger: the
// limits, the report and the check of the totals.
type ledgerView interface {
	Limits() ledger.Limits
	RecordedLimits(ctx context.Context, dataset string) (ledger.RecordedLimits, bool, error)
	Report(ctx context.Context, dataset string, limits ledger.Limits) (ledger.Report, error)
	Verify(ctx context.Context, dataset string) ([]ledger.Inconsistency, error)
}

// reportLimits are the limits a report uses and where they come from.
type reportLimits struct {
	ledger.Limits
	// Recorded is set when they are the limits in force in the ledger (since
	// RecordedAt); otherwise they are the flags' or the configuration's.
	Recorded   bool
	RecordedAt time.Time
}

// ledgerLimits returns the limits to report against: those the curator recorded
// when it last started, with a warning when budget settings given here differ;
// without a record, the budget given here, with a warning; and an error naming the
// flags when there is neither.
func ledgerLimits(ctx context.Context, store ledgerView, dataset string, configured ledger.Limits, given map[string]bool) (reportLimits, []string, error) {
	rec, found, err := store.RecordedLimits(ctx, dataset)
	if err != nil {
		return reportLimits{}, nil, err
	}
	var budgetGiven []string
	for _, f := range budgetFlags {
		if given[f] {
			budgetGiven = append(budgetGiven, "--"+f)
		}
	}
	if found {
		var w []string
		if len(budgetGiven) > 0 && configured != rec.Limits {
			w = append(w, fmt.Sprintf("WARNING: the budget given here (%s, from the command line, --config or the environment: %s) differs from the limits "+
				"the curator recorded when it last started, at %s (%s); the figures below use the recorded limits, the limits in force, which every curator "+
				"sharing the ledger enforces until one starts with --change-limits",
				strings.Join(budgetGiven, ", "), ledger.LimitsText(configured), rec.Recorded.Format(time.RFC3339), ledger.LimitsText(rec.Limits)))
		}
		return reportLimits{Limits: rec.Limits, Recorded: true, RecordedAt: rec.Recorded}, w, nil
	}
	if len(budgetGiven) == 0 {
		return reportLimits{}, nil, fmt.Errorf("curator ledger: no budget limits are recorded for dataset id %q (a curator records them each time it starts; "+
			"this ledger was last served by an older version, or never): give the curator's budget with --budget-epsilon and --budget-delta "+
			"(and --dataset-budget-epsilon, --dataset-budget-delta if it sets them), or its --config", dataset)
	}
	if err := configured.Validate(); err != nil {
		return reportLimits{}, nil, fmt.Errorf("curator ledger: --budget-epsilon, --budget-delta: %w", err)
	}
	return reportLimits{Limits: configured}, []string{fmt.Sprintf("no budget limits are recorded for dataset id %q (the curator records them when it starts): "+
		"the figures below use the budget given here (%s), which may not be what the curator enforces", dataset, ledger.LimitsText(configured))}, nil
}

// shownRows are the identities of a relation worth listing: the modelers, and the
// curator's own records when they cost something (the private scaling estimate, which
// the dataset cap pays).
func shownRows(rr ledger.RelationReport) []ledger.ReportRow {
	var rows []ledger.ReportRow
	for _, r := range rr.Identities {
		if !ledger.IsReserved(r.Identity) || r.Spent.Epsilon.Sign() != 0 || r.Spent.Delta.Sign() != 0 || r.Reservations > 0 {
			rows = append(rows, r)
		}
	}
	return rows
}

// reservedText says what live reservations hold in rep, per relation, for people
// ("" when none).
func reservedText(rep ledger.Report) string {
	var parts []string
	for _, rr := range rep.Relations {
		if d := rr.Dataset; d.Reservations > 0 {
			parts = append(parts, fmt.Sprintf("%d under %s, ε=%s δ=%s", d.Reservations, rr.Relation,
				ledger.FormatSpent(d.Reserved.Epsilon), ledger.FormatSpent(d.Reserved.Delta)))
		}
	}
	return strings.Join(parts, "; ")
}

// ratOrZero is r, or 0 when r is nil (a report row built without reservations).
func ratOrZero(r *big.Rat) *big.Rat {
	if r == nil {
		return new(big.Rat)
	}
	return r
}

// leftLimit is the limit a row's remainder is taken against, for FormatRemaining: an
// identity's is capped by the dataset's, so the smaller of both.
func leftLimit(identity bool, l ledger.Limits) ledger.Cost {
	if !identity {
		return l.Dataset
	}
	return ledger.Cost{Epsilon: math.Min(l.PerIdentity.Epsilon, l.Dataset.Epsilon), Delta: math.Min(l.PerIdentity.Delta, l.Dataset.Delta)}
}

// overMark ends the line of a row whose total exceeds its limit in force (a limit
// lowered since): a last cell, so that rows within their limits end without padding.
func overMark(over bool) string {
	if over {
		return "\tOVER LIMIT"
	}
	return ""
}

// patientWho names the dataset's whole-patient scope in the one-line statement.
func patientWho(dataset string) string {
	return "dataset " + dataset + ": every release to every identity, and the curator's own estimates"
}

// patientConversions says, in the listing, how each relation's charges become
// whole-patient figures (docs/PRIVACY.md has the theorems).
const patientConversions = "Each charge's whole-patient figure is its (ε, δ) for replacing one patient's record by any other: a projection's by group privacy " +
	"at the clip diameter (its ρ of zCDP at that distance, converted at its δ), a release stated for adding or removing one training record by two such steps, " +
	"a record-level release as it is; a release that protects less than a whole record (exact answers, a tuning job that trains with no mechanism) has none. " +
	"The figures are added by basic composition, over every relation."

// writeLedgerText writes the ledger for a person, section by section. out and
// the tables' writer share one stream: each section flushes its table before
// out writes again, so the tables and the sentences between them stay in order.
func writeLedgerText(out io.Writer, lim reportLimits, history []ledger.RecordedLimits, rep ledger.Report, entries []ledger.Receipt, evaluations int, all bool) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	if err := writePatientText(out, w, lim, rep); err != nil {
		return err
	}
	writeLimitsText(out, lim, history)
	if err := writeEntriesText(out, w, entries, evaluations, all); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nLEFT is what a charge may still spend: an identity's own remainder, capped by the dataset's; figures are rounded to %d significant digits (remainders never to more than can be spent, whole-patient totals up; --json or --csv give them exactly).\n", ledger.DisplayDigits)
	reserved := reservedText(rep) != "" // a live reservation counts towards some relation
	if reserved {
		fmt.Fprintln(out, "RESERVED is what releases being computed hold: not spent yet (charged when they end, given back if they fail or expire), but no longer LEFT.")
	}
	if err := writeRelationsText(out, w, lim, rep.Relations, reserved); err != nil {
		return err
	}
	return writeStoredText(out, w, rep.Stored)
}

// writeStoredText lists what the releases keep for replay, which the stored-bytes
// quotas bound when a release is reserved (nothing when none keeps any).
func writeStoredText(out io.Writer, w *tabwriter.Writer, rows []ledger.StoredRow) error {
	if len(rows) == 0 || rows[0].Releases == 0 && rows[0].Reserved == 0 {
		return nil
	}
	fmt.Fprintln(out, "\nWhat the releases keep for replay (bounded by serve's --stored-bytes-per-identity and --stored-bytes-per-dataset)")
	fmt.Fprintln(w, "IDENTITY\tSTORED\tRELEASES\tRESERVED")
	for _, r := range append(rows[1:], rows[0]) {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", cmp.Or(r.Identity, "(dataset)"), ledger.FormatBytes(r.Bytes), r.Releases, ledger.FormatBytes(r.Reserved))
	}
	return w.Flush()
}

// writePatientText comes first because what one patient can lose, over every
// relation, is the figure a privacy officer copies.
func writePatientText(out io.Writer, w *tabwriter.Writer, lim reportLimits, rep ledger.Report) error {
	p := rep.Patient
	fmt.Fprintln(out, ledger.PatientStatement(patientWho(rep.Dataset), p.Dataset.Total, lim.Patient.Dataset))
	if p.Dataset.OverLimit {
		fmt.Fprintf(out, "OVER LIMIT: the dataset's whole-patient total is above the cap in force (releases made before it was set or lowered).\n")
	}
	fmt.Fprintf(out, "\nWhat one patient can lose, over every relation (%s)\n", patientConversions)
	fmt.Fprintln(w, "IDENTITY\tEPSILON\tDELTA\tRELEASES\tNOT BOUNDED\tEPSILON LEFT\tDELTA LEFT")
	for _, r := range p.Identities {
		if !ledger.IsReserved(r.Identity) || r.Total.Epsilon.Sign() != 0 || r.Total.Delta.Sign() != 0 || !r.Total.Bounded() {
			writePatientRow(w, r.Identity, r)
		}
	}
	writePatientRow(w, "(dataset)", p.Dataset)
	if err := w.Flush(); err != nil {
		return err
	}
	for _, r := range p.Identities {
		if ledger.IsReserved(r.Identity) && (r.Total.Epsilon.Sign() != 0 || r.Total.Delta.Sign() != 0) {
			fmt.Fprintf(out, "Each identity's row leaves out the %s row, the curator's own estimates that every release depends on: what one identity's releases cost a patient is its row plus the dataset's estimate (docs/PRIVACY.md, section 0).\n", r.Identity)
		}
	}
	if r := p.Dataset.Reserved; r.Charges > 0 {
		eps, del := ledger.FormatBound(ratOrZero(r.Epsilon)), ledger.FormatBound(ratOrZero(r.Delta))
		if r.Bounded() {
			fmt.Fprintf(out, "Releases being computed (%d reserved, not yet charged) add ε=%s, δ=%s for a whole patient; the LEFT figures count them.\n",
				r.Charges, eps, del)
		} else {
			fmt.Fprintf(out, "Releases being computed (%d reserved, not yet charged) include %d with no finite whole-patient figure; the others add ε=%s, δ=%s.\n",
				r.Charges, r.Unbounded, eps, del)
		}
	}
	if e, d, ok := p.Dataset.Total.ZCDP(); ok {
		fmt.Fprintf(out, "The Gaussian projections alone are %s-zCDP together for a whole patient, ε = %s at δ = %g by zCDP composition (Bun & Steinke 2016, Lemma 2.3): "+
			"a tighter figure for them when their (ε, δ) were not chosen after seeing earlier releases; the total above holds however they were chosen.\n",
			ledger.FormatBound(p.Dataset.Total.Rho), roundUpText(e), d)
	}
	return nil
}

// writePatientRow shows an unbounded total as ∞ and, under a cap, nothing
// left once the total is unbounded; "-" means no cap.
func writePatientRow(w io.Writer, who string, r ledger.PatientRow) {
	eps, del := ledger.FormatBound(r.Total.Epsilon), ledger.FormatBound(r.Total.Delta)
	if !r.Total.Bounded() {
		eps = "∞"
	}
	le, ld := "-", "-"
	if r.Cap.Epsilon > 0 {
		le, ld = "0", "0"
		if r.Total.Bounded() {
			le, ld = ledger.FormatRemaining(r.Left.Epsilon, r.Cap.Epsilon), ledger.FormatRemaining(r.Left.Delta, r.Cap.Delta)
		}
	}
	fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%d\t%s\t%s%s\n", who, eps, del, r.Total.Charges, r.Total.Unbounded, le, ld, overMark(r.OverLimit))
}

// writeLimitsText says where the limits come from, so that a reader can tell
// limits a curator enforced from ones typed on this command line.
func writeLimitsText(out io.Writer, lim reportLimits, history []ledger.RecordedLimits) {
	src := "given on the command line or in --config; no curator has recorded limits in this ledger"
	if lim.Recorded {
		src = "in force since " + lim.RecordedAt.Format(time.RFC3339) + ", recorded by the curator"
	}
	fmt.Fprintf(out, "\nLimits (%s): %s\n", src, ledger.LimitsText(lim.Limits))
	if len(history) <= 1 {
		return
	}
	fmt.Fprintln(out, "History of the limits (each start records them; a start with other limits changes them only with --change-limits):")
	for i, h := range history {
		mark := ""
		if i == len(history)-1 {
			mark = "  ← in force"
		}
		starts := fmt.Sprintf("%d starts", h.Starts)
		if h.Starts == 1 {
			starts = "1 start"
		}
		fmt.Fprintf(out, "  %s to %s (%s): %s%s\n", h.Recorded.Format(time.RFC3339), h.Confirmed.Format(time.RFC3339), starts, ledger.LimitsText(h.Limits), mark)
	}
}

// writeEntriesText lists the releases; records that cost nothing are only
// counted unless all, since they would bury the ones that did.
func writeEntriesText(out io.Writer, w *tabwriter.Writer, entries []ledger.Receipt, evaluations int, all bool) error {
	fmt.Fprintln(out)
	fmt.Fprintln(w, ledgerEntriesHeader)
	free := 0
	for _, e := range entries {
		if !all && e.Cost == (ledger.Cost{}) && !e.Patient.Unbounded {
			free++
			continue
		}
		fmt.Fprint(w, ledgerEntryLine(e))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if free > 0 {
		fmt.Fprintf(out, "(and %d records at no cost: query answers, exact ones or private ones covered by their identity's query-answers charge; --all lists them)\n", free)
	}
	if evaluations > 0 {
		fmt.Fprintf(out, "Evaluation records of the curator (rows evaluated, or waiting for it): %d. They cost nothing, are not releases, and no count in this listing includes them.\n", evaluations)
	}
	return nil
}

// writeRelationsText writes one table per neighbour relation: guarantees
// stated under different relations are never summed (see package ledger).
// The RESERVED columns appear only while releases are being computed: the
// usual reading, of a stopped curator's ledger, holds none.
func writeRelationsText(out io.Writer, w *tabwriter.Writer, lim reportLimits, relations []ledger.RelationReport, reserved bool) error {
	line := func(who string, r ledger.ReportRow, identity bool) {
		l := leftLimit(identity, lim.Limits)
		res := ""
		if reserved {
			res = "\t" + ledger.FormatSpent(ratOrZero(r.Reserved.Epsilon)) + "\t" + ledger.FormatSpent(ratOrZero(r.Reserved.Delta))
		}
		fmt.Fprintf(w, "%s\t%s\t%s%s\t%s\t%s%s\n", who, ledger.FormatSpent(r.Spent.Epsilon), ledger.FormatSpent(r.Spent.Delta), res,
			ledger.FormatRemaining(r.Left.Epsilon, l.Epsilon), ledger.FormatRemaining(r.Left.Delta, l.Delta), overMark(r.OverLimit))
	}
	for _, rr := range relations {
		rows := shownRows(rr)
		if len(rows) == 0 && rr.Dataset.Spent.Epsilon.Sign() == 0 && rr.Dataset.Spent.Delta.Sign() == 0 && rr.Dataset.Reservations == 0 {
			continue // only the curator's own records
		}
		fmt.Fprintf(out, "\nBudget under the %s neighbour relation%s:\n", rr.Relation, relationNote(rr.Relation))
		if reserved {
			fmt.Fprintln(w, "IDENTITY\tEPSILON SPENT\tDELTA SPENT\tEPSILON RESERVED\tDELTA RESERVED\tEPSILON LEFT\tDELTA LEFT")
		} else {
			fmt.Fprintln(w, "IDENTITY\tEPSILON SPENT\tDELTA SPENT\tEPSILON LEFT\tDELTA LEFT")
		}
		for _, r := range rows {
			line(r.Identity, r, true)
		}
		line("(dataset)", rr.Dataset, false)
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// roundUpText prints ε rounded up to three significant digits.
func roundUpText(e float64) string {
	if e == 0 || math.IsInf(e, 0) || math.IsNaN(e) {
		return strconv.FormatFloat(e, 'g', -1, 64)
	}
	p := math.Pow(10, math.Floor(math.Log10(e))-2)
	return strconv.FormatFloat(math.Ceil(e/p)*p, 'g', 3, 64)
}

// floatDown is r as a float64 rounded toward zero, so that a remainder read as a
// float64 is never more than can be spent.
func floatDown(r *big.Rat) float64 {
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) > 0 {
		f = math.Nextafter(f, 0)
	}
	return f
}

// jsonCost is a cost in the JSON and CSV output: float64 values (spent: the nearest;
// left: rounded toward zero) and the exact rationals as "num/den" strings.
type jsonCost struct {
	Epsilon      float64 `json:"epsilon"`
	Delta        float64 `json:"delta"`
	EpsilonExact string  `json:"epsilon_exact"`
	DeltaExact   string  `json:"delta_exact"`
}

func spentCost(c ledger.ExactCost) jsonCost {
	c = ledger.ExactCost{Epsilon: ratOrZero(c.Epsilon), Delta: ratOrZero(c.Delta)}
	f := c.Cost()
	return jsonCost{Epsilon: f.Epsilon, Delta: f.Delta, EpsilonExact: c.Epsilon.RatString(), DeltaExact: c.Delta.RatString()}
}

func leftCost(c ledger.ExactCost) jsonCost {
	return jsonCost{Epsilon: floatDown(c.Epsilon), Delta: floatDown(c.Delta), EpsilonExact: c.Epsilon.RatString(), DeltaExact: c.Delta.RatString()}
}

type jsonRow struct {
	Identity string   `json:"identity,omitempty"`
	Charges  int      `json:"charges"`
	Spent    jsonCost `json:"spent"`
	// Reserved is what releases being computed hold (Reservations of them): not
	// spent, but out of Left.
	Reserved     jsonCost `json:"reserved"`
	Reservations int      `json:"reservations"`
	// Left is what a charge may still spend (capped by the dataset for an identity);
	// OwnLeft the identity's remainder before the cap.
	Left    jsonCost  `json:"left"`
	OwnLeft *jsonCost `json:"own_left,omitempty"`
	// OverLimit: spent is above the row's own limit in force (lowered since).
	OverLimit bool `json:"over_limit"`
}

func rowJSON(r ledger.ReportRow, identity bool) jsonRow {
	j := jsonRow{Identity: r.Identity, Charges: r.Charges, Spent: spentCost(r.Spent), Reserved: spentCost(r.Reserved), Reservations: r.Reservations,
		Left: leftCost(r.Left), OverLimit: r.OverLimit}
	if identity {
		own := leftCost(r.OwnLeft)
		j.OwnLeft = &own
	}
	return j
}

type jsonLimits struct {
	Source      string      `json:"source,omitempty"` // "recorded" or "flags"
	RecordedAt  *time.Time  `json:"recorded_at,omitempty"`
	PerIdentity ledger.Cost `json:"per_identity"`
	Dataset     ledger.Cost `json:"dataset"`
	// The whole-patient caps (ε 0: no cap).
	PatientPerIdentity ledger.Cost `json:"whole_patient_per_identity"`
	PatientDataset     ledger.Cost `json:"whole_patient_dataset"`
	// For an entry of the history: the last start that found them in force, and how
	// many starts recorded or found them.
	ConfirmedAt *time.Time `json:"confirmed_at,omitempty"`
	Starts      int64      `json:"starts,omitempty"`
}

func limitsJSON(l ledger.Limits) jsonLimits {
	return jsonLimits{PerIdentity: l.PerIdentity, Dataset: l.Dataset, PatientPerIdentity: l.Patient.PerIdentity, PatientDataset: l.Patient.Dataset}
}

// jsonPatient is the whole-patient account: what one patient can lose, over every
// relation, by identity and for the dataset.
type jsonPatient struct {
	// Statement is the dataset's figure in one line, for people.
	Statement   string           `json:"statement"`
	Conversions string           `json:"conversions"`
	Dataset     jsonPatientRow   `json:"dataset"`
	Identities  []jsonPatientRow `json:"identities"`
}

type jsonPatientRow struct {
	Identity string `json:"identity,omitempty"`
	// Bounded is false when NotBounded releases have no finite figure: Spent then
	// sums the others only, and the total is not bounded.
	Bounded    bool     `json:"bounded"`
	Releases   int64    `json:"releases"`
	NotBounded int64    `json:"not_bounded"`
	Spent      jsonCost `json:"spent"`
	// Reserved is what releases being computed hold for a whole patient (the finite
	// parts; Reservations of them): not spent, but out of Left.
	Reserved     jsonCost `json:"reserved"`
	Reservations int64    `json:"reservations"`
	// ReservedNotBounded counts the reservations with no finite figure.
	ReservedNotBounded int64 `json:"reserved_not_bounded"`
	// Cap is the whole-patient cap of the row (absent: none); Left what it leaves.
	Cap       *ledger.Cost `json:"cap,omitempty"`
	Left      *jsonCost    `json:"left,omitempty"`
	OverLimit bool         `json:"over_limit"`
	// ZCDP: the Gaussian projections alone, Σρ and its conversion at their summed δ
	// (valid when their parameters were not chosen adaptively).
	ZCDP *jsonZCDP `json:"zcdp,omitempty"`
}

type jsonZCDP struct {
	Rho      float64 `json:"rho"`
	RhoExact string  `json:"rho_exact"`
	Epsilon  float64 `json:"epsilon"`
	Delta    float64 `json:"delta"`
}

func patientRowJSON(r ledger.PatientRow) jsonPatientRow {
	t := r.Total
	j := jsonPatientRow{Identity: r.Identity, Bounded: t.Bounded(), Releases: t.Charges, NotBounded: t.Unbounded,
		Spent:    spentCost(ledger.ExactCost{Epsilon: t.Epsilon, Delta: t.Delta}),
		Reserved: spentCost(ledger.ExactCost{Epsilon: r.Reserved.Epsilon, Delta: r.Reserved.Delta}), Reservations: r.Reserved.Charges,
		ReservedNotBounded: r.Reserved.Unbounded, OverLimit: r.OverLimit}
	if r.Cap.Epsilon > 0 {
		c := r.Cap
		j.Cap = &c
		if t.Bounded() {
			l := leftCost(r.Left)
			j.Left = &l
		}
	}
	if e, d, ok := t.ZCDP(); ok {
		rho, _ := t.Rho.Float64()
		j.ZCDP = &jsonZCDP{Rho: rho, RhoExact: t.Rho.RatString(), Epsilon: e, Delta: d}
	}
	return j
}

// jsonWholePatient is an entry's whole-patient cost.
type jsonWholePatient struct {
	Bounded bool    `json:"bounded"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Rho     float64 `json:"rho,omitempty"`
}

type jsonRelation struct {
	Relation ledger.Relation `json:"relation"`
	// Includes lists the relations whose releases count towards this one's totals.
	Includes   []ledger.Relation `json:"includes"`
	Dataset    jsonRow           `json:"dataset"`
	Identities []jsonRow         `json:"identities"`
}

type jsonEntry struct {
	Time         time.Time        `json:"time"`
	Identity     string           `json:"identity"`
	Kind         string           `json:"kind"`
	Relation     ledger.Relation  `json:"relation"`
	Epsilon      float64          `json:"epsilon"`
	Delta        float64          `json:"delta"`
	WholePatient jsonWholePatient `json:"whole_patient"`
	Key          string           `json:"key"`
	Description  string           `json:"description"`
}

type jsonLedger struct {
	DatasetID string `json:"dataset_id"`
	// WholePatient comes first: what one patient can lose.
	WholePatient  jsonPatient    `json:"whole_patient"`
	Limits        jsonLimits     `json:"limits"`
	LimitsHistory []jsonLimits   `json:"limits_history"`
	Warnings      []string       `json:"warnings"`
	Relations     []jsonRelation `json:"relations"`
	Entries       []jsonEntry    `json:"entries"`
	// Evaluations counts the curator's own records of rows evaluated or waiting for
	// it: not releases, so in no count and not in Entries.
	Evaluations int `json:"evaluations"`
}

func writeLedgerJSON(out io.Writer, lim reportLimits, history []ledger.RecordedLimits, warnings []string, rep ledger.Report, entries []ledger.Receipt, evaluations int) error {
	doc := jsonLedger{DatasetID: rep.Dataset, Evaluations: evaluations, Warnings: append([]string{}, warnings...), Relations: []jsonRelation{}, Entries: []jsonEntry{},
		Limits: limitsJSON(lim.Limits), LimitsHistory: []jsonLimits{}}
	doc.Limits.Source = "flags"
	if lim.Recorded {
		at := lim.RecordedAt
		doc.Limits.Source, doc.Limits.RecordedAt = "recorded", &at
	}
	for _, h := range history {
		j := limitsJSON(h.Limits)
		rec, conf := h.Recorded, h.Confirmed
		j.RecordedAt, j.ConfirmedAt, j.Starts = &rec, &conf, h.Starts
		doc.LimitsHistory = append(doc.LimitsHistory, j)
	}
	doc.WholePatient = jsonPatient{Statement: ledger.PatientStatement(patientWho(rep.Dataset), rep.Patient.Dataset.Total, lim.Patient.Dataset),
		Conversions: patientConversions, Dataset: patientRowJSON(rep.Patient.Dataset), Identities: []jsonPatientRow{}}
	for _, r := range rep.Patient.Identities {
		doc.WholePatient.Identities = append(doc.WholePatient.Identities, patientRowJSON(r))
	}
	for _, rr := range rep.Relations {
		jr := jsonRelation{Relation: rr.Relation, Includes: []ledger.Relation{}, Dataset: rowJSON(rr.Dataset, false), Identities: []jsonRow{}}
		for _, r := range ledger.Relations {
			if r != rr.Relation && r.Implies(rr.Relation) {
				jr.Includes = append(jr.Includes, r)
			}
		}
		for _, r := range rr.Identities {
			jr.Identities = append(jr.Identities, rowJSON(r, true))
		}
		doc.Relations = append(doc.Relations, jr)
	}
	for _, e := range entries {
		doc.Entries = append(doc.Entries, jsonEntry{Time: e.Created.UTC(), Identity: e.Identity, Kind: e.Kind, Relation: e.Relation,
			Epsilon: e.Cost.Epsilon, Delta: e.Cost.Delta, Key: e.Key, Description: e.Description,
			WholePatient: jsonWholePatient{Bounded: !e.Patient.Unbounded, Epsilon: e.Patient.Epsilon, Delta: e.Patient.Delta, Rho: e.Patient.Rho}})
	}
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// ledgerCSVHeader heads 'curator ledger --csv': first the whole-patient rows (relation
// "whole-patient": what one patient can lose, over every relation; epsilon "+Inf" when
// not bounded, left empty without a cap), then one row per relation and identity, and
// one for the dataset (scope "dataset", empty identity). The last columns, after those
// of earlier versions, are what releases being computed hold (reserved, not spent but
// out of left) and how many reservations hold it.
var ledgerCSVHeader = []string{"relation", "scope", "identity", "charges",
	"epsilon_spent", "delta_spent", "epsilon_left", "delta_left",
	"epsilon_spent_exact", "delta_spent_exact", "epsilon_left_exact", "delta_left_exact", "over_limit", "not_bounded",
	"epsilon_reserved", "delta_reserved", "epsilon_reserved_exact", "delta_reserved_exact", "reservations"}

// csvWholePatient labels the whole-patient rows of the CSV.
const csvWholePatient = "whole-patient"

func writeLedgerCSV(out io.Writer, rep ledger.Report) error {
	w := csv.NewWriter(out)
	if err := w.Write(ledgerCSVHeader); err != nil {
		return err
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	prow := func(scope string, r ledger.PatientRow) error {
		j := patientRowJSON(r)
		se, sd, see, sde := g(j.Spent.Epsilon), g(j.Spent.Delta), j.Spent.EpsilonExact, j.Spent.DeltaExact
		if !j.Bounded {
			se, see = "+Inf", "+Inf"
		}
		var le, ld, lee, lde string
		if j.Left != nil {
			le, ld, lee, lde = g(j.Left.Epsilon), g(j.Left.Delta), j.Left.EpsilonExact, j.Left.DeltaExact
		} else if j.Cap != nil {
			le, ld, lee, lde = "0", "0", "0", "0"
		}
		res := j.Reserved
		return w.Write([]string{csvWholePatient, scope, r.Identity, strconv.FormatInt(j.Releases, 10),
			se, sd, le, ld, see, sde, lee, lde, strconv.FormatBool(j.OverLimit), strconv.FormatInt(j.NotBounded, 10),
			g(res.Epsilon), g(res.Delta), res.EpsilonExact, res.DeltaExact, strconv.FormatInt(j.Reservations, 10)})
	}
	for _, r := range rep.Patient.Identities {
		if err := prow(ledger.ScopeIdentity, r); err != nil {
			return err
		}
	}
	if err := prow(ledger.ScopeDataset, rep.Patient.Dataset); err != nil {
		return err
	}
	row := func(rel ledger.Relation, scope string, r ledger.ReportRow) error {
		s, l, res := spentCost(r.Spent), leftCost(r.Left), spentCost(r.Reserved)
		return w.Write([]string{string(rel), scope, r.Identity, strconv.Itoa(r.Charges),
			g(s.Epsilon), g(s.Delta), g(l.Epsilon), g(l.Delta), s.EpsilonExact, s.DeltaExact, l.EpsilonExact, l.DeltaExact,
			strconv.FormatBool(r.OverLimit), "0", g(res.Epsilon), g(res.Delta), res.EpsilonExact, res.DeltaExact, strconv.Itoa(r.Reservations)})
	}
	for _, rr := range rep.Relations {
		for _, r := range rr.Identities {
			if err := row(rr.Relation, ledger.ScopeIdentity, r); err != nil {
				return err
			}
		}
		if err := row(rr.Relation, ledger.ScopeDataset, rr.Dataset); err != nil {
			return err
		}
	}
	w.Flush()
	return w.Error()
}
