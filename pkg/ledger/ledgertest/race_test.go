package ledgertest

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"
	"sync"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

// The race of testRace: raceIdentities × racePerIdentity charges of (raceUnit,
// raceDeltaUnit).
const (
	raceIdentities  = 20
	racePerIdentity = 10
	raceUnit        = 1.0 / 64 // ε of each racing charge
	raceDeltaUnit   = 1.0 / (1 << 30)
)

// raceCase is a race of testRace.
type raceCase struct {
	name      string
	limits    ledger.Limits
	preEps    float64 // spent before the race
	wantWins  int
	wantScope string
}

// testRace is the race asked for by the ledger issue: 200 concurrent charges from 20
// identities racing for the last of a budget, through nStores Ledgers on one
// location. All amounts are dyadic, so what fits is an exact count.
func testRace(t *testing.T, loc Location, nStores int) {
	tests := []raceCase{
		// 37 units left in the dataset; identities could take 4 each (80).
		{"dataset binds", ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 4 * raceUnit, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 0.5}}, 1 - 37*raceUnit, 37, ledger.ScopeDataset},
		// The dataset has room for 128 units; each identity takes exactly 4.
		{"identities bind", ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 4 * raceUnit, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 2, Delta: 0.5}}, 0, 80, ledger.ScopeIdentity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { race(t, loc, nStores, tt) })
	}
}

// race runs tt through nStores Ledgers on one location, checks who won, the
// totals (checkRaceTotals), and that retries replay the winners and refuse the
// losers.
func race(t *testing.T, loc Location, nStores int, tt raceCase) {
	open := loc(t)
	stores := make([]*ledger.Ledger, nStores)
	for i := range stores {
		stores[i] = open(t, tt.limits)
	}
	// Spend preEps first, through "pre" identities that each stay within their own limit.
	nPre := 0
	for left := tt.preEps; left > 0; nPre++ {
		c := math.Min(left, tt.limits.PerIdentity.Epsilon)
		MustCharge(t, stores[0], ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: fmt.Sprintf("pre%02d", nPre)}, Key: "pre", Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: c, Delta: 0}})
		left -= c
	}
	charge := func(i int) ledger.Charge {
		return ledger.Charge{Account: ledger.Account{Dataset: "diabetes", Identity: fmt.Sprintf("id%02d", i%raceIdentities)}, Key: fmt.Sprint("k", i),
			Kind: "query", Relation: ledger.RelationRecord, Cost: ledger.Cost{Epsilon: raceUnit, Delta: raceDeltaUnit}, Result: []byte(fmt.Sprint("result ", i))}
	}
	n := raceIdentities * racePerIdentity
	won := make([]bool, n)
	errs := make([]error, n)
	together(n, func(i int) {
		r, err := stores[i%nStores].Charge(ctx, charge(i))
		errs[i] = err
		won[i] = err == nil && !r.Replayed
	})
	wins := 0
	for i, err := range errs {
		var be *ledger.BudgetError
		switch {
		case err == nil:
			wins++
		case !errors.As(err, &be):
			t.Errorf("charge %d: error %v, want nil or a BudgetError", i, err)
		case tt.wantScope == ledger.ScopeIdentity && be.Scope != ledger.ScopeIdentity:
			// (When the dataset binds, a loser may meet either limit first.)
			t.Errorf("charge %d: refused for scope %s, want %s", i, be.Scope, tt.wantScope)
		}
	}
	if wins != tt.wantWins {
		t.Errorf("%d charges succeeded, want exactly %d", wins, tt.wantWins)
	}

	s := stores[nStores-1]
	es := checkRaceTotals(t, s, tt, nPre)
	// Retries: winners replay their stored result, losers are still refused.
	for i := range n {
		r, err := stores[(i+1)%nStores].Charge(ctx, charge(i))
		switch {
		case won[i] && (err != nil || !r.Replayed || string(r.Result) != fmt.Sprint("result ", i)):
			t.Errorf("retry of winner %d = %q, replayed %v, %v; want its stored result", i, r.Result, r.Replayed, err)
		case !won[i] && !errors.Is(err, ledger.ErrBudgetExceeded):
			t.Errorf("retry of loser %d error = %v, want ErrBudgetExceeded", i, err)
		}
	}
	if es2 := mustEntries(t, s, "diabetes"); len(es2) != len(es) {
		t.Errorf("after retries len(Entries) = %d, want %d", len(es2), len(es))
	}
}

// checkRaceTotals checks that the entries, the balances and the dataset's total
// after the race of tt are the winners' and the nPre charges before it, within
// the limits; it returns the entries.
func checkRaceTotals(t *testing.T, s *ledger.Ledger, tt raceCase, nPre int) []ledger.Receipt {
	es := mustEntries(t, s, "diabetes")
	if len(es) != tt.wantWins+nPre {
		t.Errorf("len(Entries) = %d, want %d", len(es), tt.wantWins+nPre)
	}
	eps, delta := exactSpent(es, "")
	wantEps := new(big.Rat).Add(new(big.Rat).SetFloat64(tt.preEps), new(big.Rat).SetFloat64(float64(tt.wantWins)*raceUnit))
	wantDelta := new(big.Rat).SetFloat64(float64(tt.wantWins) * raceDeltaUnit)
	if eps.Cmp(wantEps) != 0 || delta.Cmp(wantDelta) != 0 {
		t.Errorf("Entries sum to ε=%s, δ=%s; want %s, %s", eps.FloatString(20), delta.FloatString(20), wantEps.FloatString(20), wantDelta.FloatString(20))
	}
	accs, err := s.Accounts(ctx, "diabetes")
	if err != nil {
		t.Fatalf("Accounts error: %v", err)
	}
	for _, b := range accs {
		e, d := exactSpent(es, b.Identity)
		ef, _ := e.Float64()
		df, _ := d.Float64()
		if b.Spent != (ledger.Cost{Epsilon: ef, Delta: df}) {
			t.Errorf("Balance(%s).Spent = %+v, entries sum to {%g %g}", b.Identity, b.Spent, ef, df)
		}
		if b.Spent.Epsilon > tt.limits.PerIdentity.Epsilon {
			t.Errorf("Balance(%s).Spent.Epsilon = %g above the limit %g", b.Identity, b.Spent.Epsilon, tt.limits.PerIdentity.Epsilon)
		}
		if tt.wantScope == ledger.ScopeIdentity && !strings.HasPrefix(b.Identity, "pre") && b.Spent.Epsilon != tt.limits.PerIdentity.Epsilon {
			t.Errorf("Balance(%s).Spent.Epsilon = %g, want exactly the limit %g", b.Identity, b.Spent.Epsilon, tt.limits.PerIdentity.Epsilon)
		}
		if b.DatasetSpent.Epsilon > tt.limits.Dataset.Epsilon {
			t.Errorf("DatasetSpent.Epsilon = %g above the limit %g", b.DatasetSpent.Epsilon, tt.limits.Dataset.Epsilon)
		}
	}
	if tt.wantScope == ledger.ScopeDataset {
		if b := MustBalance(t, s, ledger.Account{Dataset: "diabetes", Identity: "pre00"}, ledger.RelationRecord); b.DatasetRemaining.Epsilon != 0 || b.DatasetSpent.Epsilon != 1 {
			t.Errorf("dataset after the race: spent %g, remaining %g; want 1, 0", b.DatasetSpent.Epsilon, b.DatasetRemaining.Epsilon)
		}
	}
	return es
}

// together runs fn(0), …, fn(n−1) in n goroutines released at once, and waits for
// them all.
func together(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}
