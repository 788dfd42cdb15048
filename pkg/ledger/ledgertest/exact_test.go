package ledgertest

import (
	"math"
	"math/big"

	"github.com/privbo/privbo/pkg/ledger"
)

// total is the suite's own exact sum of costs, written apart from the
// ledger's so that the expected balances do not come from the code under
// test: every float64 is a dyadic rational, so the sum is exact.
type total struct {
	eps, delta big.Rat
}

func (t *total) add(c ledger.Cost) {
	t.eps.Add(&t.eps, new(big.Rat).SetFloat64(c.Epsilon))
	t.delta.Add(&t.delta, new(big.Rat).SetFloat64(c.Delta))
}

// cost rounds the total to the nearest float64 values, as Balance.Spent is.
func (t *total) cost() ledger.Cost {
	e, _ := t.eps.Float64()
	d, _ := t.delta.Float64()
	return ledger.Cost{Epsilon: e, Delta: d}
}

// remaining is max(0, limit − t) rounded toward zero, as Balance.Remaining is.
func (t *total) remaining(limit ledger.Cost) ledger.Cost {
	return ledger.Cost{Epsilon: towardZero(limit.Epsilon, &t.eps), Delta: towardZero(limit.Delta, &t.delta)}
}

func towardZero(limit float64, spent *big.Rat) float64 {
	r := new(big.Rat).Sub(new(big.Rat).SetFloat64(limit), spent)
	if r.Sign() <= 0 {
		return 0
	}
	f, _ := r.Float64()
	if new(big.Rat).SetFloat64(f).Cmp(r) > 0 {
		f = math.Nextafter(f, 0)
	}
	return f
}

// counted is a total and the number of records it sums.
type counted struct {
	t total
	n int64
}

// ratSum is the exact sum of xs.
func ratSum(xs ...float64) *big.Rat {
	r := new(big.Rat)
	for _, x := range xs {
		r.Add(r, new(big.Rat).SetFloat64(x))
	}
	return r
}
