package ledger

import (
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestLimitsValidate(t *testing.T) {
	ok := Cost{Epsilon: 1, Delta: 1e-5}
	tests := []struct {
		l       Limits
		wantErr string
	}{
		{Limits{PerIdentity: ok, Dataset: ok}, ""},
		{Limits{PerIdentity: Cost{Epsilon: 1, Delta: 0}, Dataset: Cost{Epsilon: 2, Delta: 0}}, ""},
		{Limits{PerIdentity: Cost{Epsilon: 0, Delta: 1e-5}, Dataset: ok}, "per-identity limit epsilon"},
		{Limits{PerIdentity: ok, Dataset: Cost{Epsilon: -1, Delta: 0}}, "dataset limit epsilon"},
		{Limits{PerIdentity: ok, Dataset: Cost{Epsilon: math.Inf(1), Delta: 0}}, "dataset limit epsilon"},
		{Limits{PerIdentity: Cost{Epsilon: math.NaN(), Delta: 0}, Dataset: ok}, "per-identity limit epsilon"},
		{Limits{PerIdentity: Cost{Epsilon: 1, Delta: 1}, Dataset: ok}, "per-identity limit delta"},
		{Limits{PerIdentity: ok, Dataset: Cost{Epsilon: 1, Delta: -0.1}}, "dataset limit delta"},
		{Limits{PerIdentity: ok, Dataset: Cost{Epsilon: 1, Delta: math.NaN()}}, "dataset limit delta"},
		{Limits{}, "per-identity limit epsilon"},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{PerIdentity: Cost{Epsilon: 10, Delta: 1e-5}}}, ""},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{Dataset: Cost{Epsilon: 10, Delta: 0}}}, ""},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{PerIdentity: Cost{Epsilon: 0, Delta: 1e-5}}}, "whole-patient per-identity cap has δ"},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{Dataset: Cost{Epsilon: math.Inf(1), Delta: 0}}}, "whole-patient dataset limit epsilon"},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{Dataset: Cost{Epsilon: 1, Delta: 1}}}, "whole-patient dataset limit delta"},
		{Limits{PerIdentity: ok, Dataset: ok, Patient: PatientLimits{PerIdentity: Cost{Epsilon: -1, Delta: 0}}}, "whole-patient per-identity limit epsilon"},
	}
	for _, tt := range tests {
		err := tt.l.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%+v.Validate() = %v, want error containing %q", tt.l, err, tt.wantErr)
		}
	}
}

func TestChargeValidate(t *testing.T) {
	good := Charge{Account: Account{"diabetes", "acme"}, Key: "k", Kind: "query", Relation: RelationRecord, Cost: Cost{Epsilon: 1, Delta: 0}}
	tests := []struct {
		name    string
		edit    func(c *Charge)
		wantErr string
	}{
		{"valid", func(*Charge) {}, ""},
		{"empty dataset", func(c *Charge) { c.Dataset = "" }, "dataset must not be empty"},
		{"empty identity", func(c *Charge) { c.Identity = "" }, "identity must not be empty"},
		{"empty key", func(c *Charge) { c.Key = "" }, "key must not be empty"},
		{"empty kind", func(c *Charge) { c.Kind = "" }, "kind must not be empty"},
		{"long key", func(c *Charge) { c.Key = strings.Repeat("k", maxNameLen+1) }, "key must be at most"},
		{"key at limit", func(c *Charge) { c.Key = strings.Repeat("k", maxNameLen) }, ""},
		{"invalid UTF-8", func(c *Charge) { c.Identity = "a\xffb" }, "identity must be valid UTF-8"},
		{"NUL", func(c *Charge) { c.Dataset = "a\x00b" }, "dataset must not contain NUL"},
		{"long description", func(c *Charge) { c.Description = strings.Repeat("d", maxDescriptionLen+1) }, "description must be at most"},
		{"NUL description", func(c *Charge) { c.Description = "\x00" }, "description must not contain NUL"},
		{"negative cost", func(c *Charge) { c.Cost.Epsilon = -0.5 }, "epsilon must be non-negative"},
		{"no relation", func(c *Charge) { c.Relation = "" }, "unknown neighbour relation"},
		{"unknown relation", func(c *Charge) { c.Relation = "Record" }, "unknown neighbour relation"},
		{"validation-record", func(c *Charge) { c.Relation = RelationValidationRecord }, ""},
	}
	for _, tt := range tests {
		c := good
		tt.edit(&c)
		err := c.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%s: Validate() = %v, want error containing %q", tt.name, err, tt.wantErr)
		}
	}
}

func TestBudgetErrorText(t *testing.T) {
	tests := []struct {
		err  *BudgetError
		want string
	}{
		{
			&BudgetError{Scope: ScopeIdentity, Account: Account{"diabetes", "acme"}, Relation: RelationRecord, Requested: Cost{Epsilon: 1, Delta: 1e-5}, Remaining: Cost{Epsilon: 0.5, Delta: 0}},
			`ledger: budget exceeded for identity "acme" on dataset "diabetes" under the record neighbour relation: requested ε=1, δ=1e-05; remaining ε=0.5, δ=0`,
		},
		{
			&BudgetError{Scope: ScopeDataset, Account: Account{"diabetes", "acme"}, Relation: RelationFeatureUnit, Requested: Cost{Epsilon: 0.1, Delta: 0}, Remaining: Cost{Epsilon: 0.05, Delta: 2.5e-6}},
			`ledger: budget exceeded for dataset "diabetes" (charge by identity "acme") under the feature-unit neighbour relation: requested ε=0.1, δ=0; remaining ε=0.05, δ=2.5e-06`,
		},
		{
			&BudgetError{Scope: ScopeIdentity, Account: Account{"diabetes", "acme"}, Requested: Cost{Epsilon: 1, Delta: 0}, Remaining: Cost{Epsilon: 0.5, Delta: 0}},
			`ledger: budget exceeded for identity "acme" on dataset "diabetes" under an unnamed neighbour relation: requested ε=1, δ=0; remaining ε=0.5, δ=0`,
		},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %s, want %s", got, tt.want)
		}
		var err error = tt.err
		if !errors.Is(err, ErrBudgetExceeded) {
			t.Errorf("errors.Is(%v, ErrBudgetExceeded) = false, want true", err)
		}
		if errors.Is(err, ErrKeyConflict) {
			t.Errorf("errors.Is(%v, ErrKeyConflict) = true, want false", err)
		}
	}
}

// ratSum is the exact sum of xs.
func ratSum(xs ...float64) *big.Rat {
	s := new(big.Rat)
	for _, x := range xs {
		s.Add(s, new(big.Rat).SetFloat64(x))
	}
	return s
}

func TestTotalFits(t *testing.T) {
	one := Cost{Epsilon: 1, Delta: 1e-5}
	tests := []struct {
		name  string
		spent []Cost
		c     Cost
		limit Cost
		want  bool
	}{
		{"empty, exact fit", nil, Cost{Epsilon: 1, Delta: 1e-5}, one, true},
		{"half plus half", []Cost{{Epsilon: 0.5, Delta: 0}}, Cost{Epsilon: 0.5, Delta: 0}, one, true},
		{"over by 1e-9", []Cost{{Epsilon: 0.5, Delta: 0}}, Cost{Epsilon: 0.5 + 1e-9, Delta: 0}, one, false},
		{"delta over", []Cost{{Epsilon: 0, Delta: 1e-5}}, Cost{Epsilon: 0, Delta: 1e-10}, one, false},
		{"zero cost at full budget", []Cost{{Epsilon: 1, Delta: 1e-5}}, Cost{Epsilon: 0, Delta: 0}, one, true},
		{"zero epsilon, delta room", []Cost{{Epsilon: 1, Delta: 0}}, Cost{Epsilon: 0, Delta: 1e-6}, one, true},
		{"epsilon over, delta room", []Cost{{Epsilon: 1, Delta: 0}}, Cost{Epsilon: 1e-11, Delta: 1e-6}, one, false},
		{"epsilon within slack of a full budget", []Cost{{Epsilon: 1, Delta: 0}}, Cost{Epsilon: 1e-13, Delta: 0}, one, true},
		// Slack: accepted within a relative 1e-12 of the limit, refused beyond.
		{"within slack", nil, Cost{Epsilon: 1 + 0.5e-12, Delta: 0}, one, true},
		{"beyond slack", nil, Cost{Epsilon: 1 + 2e-12, Delta: 0}, one, false},
		{"zero cost above a lowered limit", []Cost{{Epsilon: 2, Delta: 0}}, Cost{Epsilon: 0, Delta: 0}, one, true},
	}
	for _, tt := range tests {
		var tot total
		for _, c := range tt.spent {
			tot.add(c)
		}
		if got := tot.fits(tt.c, tt.limit); got != tt.want {
			t.Errorf("%s: fits(%+v) = %v, want %v", tt.name, tt.c, got, tt.want)
		}
	}
}

// TestDecimalSchedules checks the premise of RelativeSlack: decimal schedules
// whose float64 costs sum exactly above the limit still fit.
func TestDecimalSchedules(t *testing.T) {
	tests := []struct {
		cost, limit float64
		n           int
	}{
		{0.1, 1, 10},
		{1e-5, 1e-4, 10},
		{0.01, 1, 100},
	}
	for _, tt := range tests {
		xs := make([]float64, tt.n)
		for i := range xs {
			xs[i] = tt.cost
		}
		// Premise: the exact sum exceeds the float64 limit (from big.Rat).
		if ratSum(xs...).Cmp(new(big.Rat).SetFloat64(tt.limit)) <= 0 {
			t.Errorf("%d×%g sums exactly to at most %g; pick a schedule that exercises the slack", tt.n, tt.cost, tt.limit)
		}
		var tot total
		for i := range tt.n {
			if !tot.fits(Cost{Epsilon: tt.cost, Delta: 0}, Cost{Epsilon: tt.limit, Delta: 0}) {
				t.Fatalf("charge %d of %d×%g refused under limit %g", i+1, tt.n, tt.cost, tt.limit)
			}
			tot.add(Cost{Epsilon: tt.cost, Delta: 0})
		}
		if tot.fits(Cost{Epsilon: tt.cost, Delta: 0}, Cost{Epsilon: tt.limit, Delta: 0}) {
			t.Errorf("charge %d of %g accepted under limit %g, want refused", tt.n+1, tt.cost, tt.limit)
		}
		if got := tot.remaining(Cost{Epsilon: tt.limit, Delta: 0}).Epsilon; got != 0 {
			t.Errorf("remaining after %d×%g = %g, want 0", tt.n, tt.cost, got)
		}
	}
}

func TestRemainingRoundsDown(t *testing.T) {
	tests := []struct {
		spent []float64
		limit float64
	}{
		{[]float64{0.1}, 1},
		{[]float64{0.1, 0.2}, 1},
		{[]float64{1e-6}, 1e-5},
		{[]float64{1.0 / 3}, 1},
		{[]float64{0.7}, 1},
		{[]float64{5e-324}, 1e-300},
		{[]float64{}, 3},
		{[]float64{2}, 1},
	}
	for _, tt := range tests {
		var tot total
		for _, x := range tt.spent {
			tot.add(Cost{Epsilon: x, Delta: 0})
		}
		rem := tot.remaining(Cost{Epsilon: tt.limit, Delta: 0}).Epsilon
		exactRem := new(big.Rat).Sub(new(big.Rat).SetFloat64(tt.limit), ratSum(tt.spent...))
		if exactRem.Sign() < 0 {
			exactRem.SetInt64(0)
		}
		got := new(big.Rat).SetFloat64(rem)
		if got.Cmp(exactRem) > 0 {
			t.Errorf("remaining(%v, %g) = %g, above the exact %s", tt.spent, tt.limit, rem, exactRem.FloatString(30))
		}
		// Rounded toward zero: the next float64 up is above the exact value.
		if up := new(big.Rat).SetFloat64(math.Nextafter(rem, math.Inf(1))); exactRem.Sign() > 0 && up.Cmp(exactRem) <= 0 {
			t.Errorf("remaining(%v, %g) = %g, more than one ulp below the exact %s", tt.spent, tt.limit, rem, exactRem.FloatString(30))
		}
		if rem > 0 && !tot.fits(Cost{Epsilon: rem, Delta: 0}, Cost{Epsilon: tt.limit, Delta: 0}) {
			t.Errorf("a charge of the remaining %g does not fit", rem)
		}
	}
}

func TestRatEncoding(t *testing.T) {
	for _, x := range []float64{0, 0.1, 1e-5, 5e-324, 1e300, 1.0 / 3} {
		r := new(big.Rat).SetFloat64(x)
		got, err := decodeRat(encodeRat(r))
		if err != nil || got.Cmp(r) != 0 {
			t.Errorf("decodeRat(encodeRat(%g)) = %v, %v, want %v", x, got, err, r)
		}
	}
	for _, s := range []string{"", "abc", "-1/2", "1/0", "NaN"} {
		if _, err := decodeRat(s); err == nil {
			t.Errorf("decodeRat(%q) = nil error, want an error", s)
		}
	}
}

// FuzzRemainingFits checks, for any valid spend and limit, that the
// reported remainder never exceeds the exact one and always fits.
func FuzzRemainingFits(f *testing.F) {
	f.Add(0.1, 0.2, 1.0)
	f.Add(1e-5, 3e-5, 1e-4)
	f.Add(0.0, 0.0, 1e-300)
	f.Fuzz(func(t *testing.T, a, b, limit float64) {
		if (Cost{Epsilon: a, Delta: 0}).Validate() != nil || (Cost{Epsilon: b, Delta: 0}).Validate() != nil || (Limits{PerIdentity: Cost{Epsilon: limit, Delta: 0}, Dataset: Cost{Epsilon: limit, Delta: 0}}).Validate() != nil {
			return
		}
		var tot total
		tot.add(Cost{Epsilon: a, Delta: 0})
		tot.add(Cost{Epsilon: b, Delta: 0})
		rem := tot.remaining(Cost{Epsilon: limit, Delta: 0}).Epsilon
		if rem < 0 || math.IsNaN(rem) {
			t.Fatalf("remaining = %g", rem)
		}
		exactRem := new(big.Rat).Sub(new(big.Rat).SetFloat64(limit), ratSum(a, b))
		if rem > 0 && new(big.Rat).SetFloat64(rem).Cmp(exactRem) > 0 {
			t.Fatalf("remaining %g above exact %s", rem, exactRem.FloatString(40))
		}
		if rem > 0 && !tot.fits(Cost{Epsilon: rem, Delta: 0}, Cost{Epsilon: limit, Delta: 0}) {
			t.Fatalf("remaining %g does not fit", rem)
		}
	})
}
