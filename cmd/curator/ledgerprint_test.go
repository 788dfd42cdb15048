package main

import (
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// TestLedgerEntryLineShowsDescription: 'curator ledger' lists each charge with its
// description on one line (the projection's relation and whole-patient ε), long ones cut.
func TestLedgerEntryLineShowsDescription(t *testing.T) {
	e := ledger.Receipt{
		Account: ledger.Account{Dataset: "diabetes", Identity: "acme"}, Key: "projection/p1", Kind: "projection",
		Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 1, Delta: 1e-5},
		Description: "private projection r=2 ε=1 δ=1e-05 label=\"\"; relation feature-unit (one protected unit of one record's scaled features);\n" +
			"whole patient (50 units): ε=134 at δ=1e-05",
		Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Patient: ledger.PatientCost{Epsilon: 133.578, Delta: 1e-5, Rho: 50},
	}
	want := "2026-01-02T03:04:05Z\tacme\tprojection\tfeature-unit\t1\t1e-05\tε=134 δ=1e-05\tprojection/p1\t" +
		"private projection r=2 ε=1 δ=1e-05 label=\"\"; relation feature-unit (one protected unit of one record's scaled features); " +
		"whole patient (50 units): ε=134 at δ=1e-05\n"
	if got := ledgerEntryLine(e); got != want {
		t.Errorf("entry line\n got: %q\nwant: %q", got, want)
	}
	if n := strings.Count(ledgerEntriesHeader, "\t"); n != strings.Count(want, "\t") {
		t.Errorf("header has %d tabs, the line %d", n, strings.Count(want, "\t"))
	}
	e.Patient = ledger.Unbounded
	if got := ledgerEntryLine(e); !strings.Contains(got, "\tNOT BOUNDED\t") {
		t.Errorf("entry line of an unbounded charge = %q, want NOT BOUNDED", got)
	}
	e.Description = strings.Repeat("é", 1000)
	line := ledgerEntryLine(e)
	d := line[strings.LastIndex(line, "\t")+1 : len(line)-1]
	if r := []rune(d); len(r) != maxListedDescription || !strings.HasSuffix(d, "…") {
		t.Errorf("long description listed as %d runes ending %q, want %d ending in …", len(r), string(r[len(r)-1]), maxListedDescription)
	}
}
