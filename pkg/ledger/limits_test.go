package ledger

import (
	"math/big"
	"strings"
	"testing"
)

func rat(s string) *big.Rat {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		panic(s)
	}
	return r
}

func TestFormatSpentAndRemaining(t *testing.T) {
	sum := func(xs ...float64) *big.Rat {
		r := new(big.Rat)
		for _, x := range xs {
			r.Add(r, new(big.Rat).SetFloat64(x))
		}
		return r
	}
	// 2 + 0.611 as float64 sum: 2.6109999999999998 once rounded to float64.
	noisy := sum(1.9, 0.711)
	if f, _ := noisy.Float64(); f == 2.611 {
		t.Fatalf("fixture: %v is not a noisy sum", f)
	}
	for _, tt := range []struct {
		name string
		got  string
		want string
	}{
		{"spent noise", FormatSpent(sum(0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1)), "1"},
		{"spent 1.9", FormatSpent(sum(1.8, 0.1)), "1.9"},
		{"spent tiny", FormatSpent(sum(1e-6, 1e-7)), "1.1e-06"},
		{"spent zero", FormatSpent(new(big.Rat)), "0"},
		{"spent 7 digits", FormatSpent(rat("1234567/1000")), "1234.57"},
		{"remaining noise", FormatRemaining(noisy, 4), "2.611"},
		// 4 − 1.9 − 0.1 − …: a remainder just below a round number within the slack.
		{"remaining below 0.6", FormatRemaining(new(big.Rat).Sub(big.NewRat(5, 2), sum(1, 0.1, 0.8)), 2.5), "0.6"},
		// A genuine 7th digit is cut, never rounded up: 1.2345678 → 1.23456.
		{"remaining toward zero", FormatRemaining(rat("12345678/10000000"), 2), "1.23456"},
		{"remaining exact", FormatRemaining(big.NewRat(1, 4), 1), "0.25"},
		{"remaining none", FormatRemaining(new(big.Rat), 1), "0"},
		{"remaining negative", FormatRemaining(big.NewRat(-1, 4), 1), "0"},
		{"remaining large", FormatRemaining(rat("99999999/10"), 1e7), "9.99999e+06"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, tt.got, tt.want)
		}
	}
	// Whatever FormatRemaining prints, a charge of it fits: exhaustive over remainders
	// made of decimal charges.
	for i := 1; i < 200; i++ {
		limit := 3.0
		spent := new(big.Rat)
		for k := 0; k < i; k++ {
			spent.Add(spent, new(big.Rat).SetFloat64(0.013))
		}
		rem := new(big.Rat).Sub(exact(limit), spent)
		shown := rat(FormatRemaining(rem, limit))
		var tt total
		tt.eps.Set(spent)
		f, _ := shown.Float64()
		if !tt.fits(Cost{Epsilon: f}, Cost{Epsilon: limit}) && rem.Sign() > 0 {
			t.Fatalf("after %d charges of 0.013: shown remainder %s does not fit", i, shown.FloatString(20))
		}
	}
}

// TestBalanceAvailable checks that what a charge can spend is the smaller remainder of
// the identity's and the dataset's, per coordinate.
func TestBalanceAvailable(t *testing.T) {
	b := Balance{Remaining: Cost{Epsilon: 2, Delta: 1e-6}, DatasetRemaining: Cost{Epsilon: 0.5, Delta: 1e-5}}
	if got := b.Available(); got != (Cost{Epsilon: 0.5, Delta: 1e-6}) {
		t.Errorf("Available = %+v, want ε 0.5 (the dataset's) and δ 1e-6 (the identity's)", got)
	}
}

// TestPatientStatementAndFormatBound pins the one-line whole-patient statement and the
// rounding of its figures: up, but not for float noise of decimal costs.
func TestPatientStatementAndFormatBound(t *testing.T) {
	for _, tt := range []struct {
		x    *big.Rat
		want string
	}{
		{new(big.Rat).SetFloat64(0.2), "0.2"},         // 0.2000000000000000111: noise
		{rat("1335785/10000"), "133.579"},             // 133.5785 rounds up
		{rat("13357841/100000"), "133.579"},           // a 7th digit is rounded up
		{rat("1335780000001/10000000000"), "133.578"}, // within the slack of 133.578
		{rat("999999999/1000000"), "1000"},            // 999.999999 up is 1000
		{new(big.Rat), "0"},
	} {
		if got := FormatBound(tt.x); got != tt.want {
			t.Errorf("FormatBound(%s) = %s, want %s", tt.x.RatString(), got, tt.want)
		}
	}
	tot := newPatientTotal()
	tot.add(PatientCost{Epsilon: 133.5785, Delta: 1e-5})
	tot.add(PatientCost{Epsilon: 1})
	want := "Whole patient (dataset d: every release to every identity, and the curator's own estimates): no patient can lose more than ε = 134.579, δ = 1e-05 " +
		"from these releases — each release's (ε, δ) for replacing one patient's record by any other, added by basic composition over 2 releases " +
		"and every neighbour relation; the ledger caps it at ε = 200, δ = 1e-05."
	if got := PatientStatement("dataset d: every release to every identity, and the curator's own estimates", tot, Cost{Epsilon: 200, Delta: 1e-5}); got != want {
		t.Errorf("PatientStatement =\n%s\nwant\n%s", got, want)
	}
	tot.add(Unbounded)
	if got := PatientStatement("identity acme on dataset d: every release to it", tot, Cost{}); !strings.Contains(got, "NOT BOUNDED — 1 of 3 releases") ||
		!strings.Contains(got, "the others add up to ε = 134.579, δ = 1e-05; no whole-patient cap is set.") {
		t.Errorf("PatientStatement (not bounded) = %s", got)
	}
}
