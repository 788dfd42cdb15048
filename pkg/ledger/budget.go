package ledger

import (
	"fmt"
	"math"
	"math/big"
)

// RelativeSlack is the relative tolerance of the limit check: a charge fits
// when the exact new total is at most limit·(1 + RelativeSlack). See the
// package documentation for why it exists and what it bounds.
const RelativeSlack = 1e-12

// slackFactor is 1 + RelativeSlack as an exact rational.
var slackFactor = big.NewRat(1_000_000_000_001, 1_000_000_000_000)

// total is an exact sum of recorded costs. Every float64 is a dyadic
// rational, so the sum is kept as a big.Rat without any rounding; it does not
// depend on the order of the records nor on the database engine.
type total struct {
	eps, delta big.Rat
}

func (t *total) add(c Cost) {
	t.eps.Add(&t.eps, exact(c.Epsilon))
	t.delta.Add(&t.delta, exact(c.Delta))
}

func (t *total) addTotal(u *total) {
	t.eps.Add(&t.eps, &u.eps)
	t.delta.Add(&t.delta, &u.delta)
}

// cost rounds the total to the nearest float64 values.
func (t *total) cost() Cost {
	e, _ := t.eps.Float64()
	d, _ := t.delta.Float64()
	return Cost{Epsilon: e, Delta: d}
}

// remaining returns max(0, limit − t), rounded toward zero.
func (t *total) remaining(limit Cost) Cost {
	return Cost{Epsilon: remainder(limit.Epsilon, &t.eps), Delta: remainder(limit.Delta, &t.delta)}
}

// fits reports whether adding c keeps every component that c increases
// within limit·(1 + RelativeSlack). A zero component never refuses a charge:
// it cannot raise a total.
func (t *total) fits(c Cost, limit Cost) bool {
	return fitsComponent(&t.eps, c.Epsilon, limit.Epsilon) && fitsComponent(&t.delta, c.Delta, limit.Delta)
}

// FitsRemaining applies the charge rule of the ledger — a total may reach
// limit·(1 + RelativeSlack), so that schedules such as ten charges of 0.1 fit — to
// a remainder read earlier (Balance.Remaining or DatasetRemaining), in float64.
// It is for refusing early what a charge would refuse; the charge's transaction,
// on exact sums, stays the authority.
func FitsRemaining(c, remaining, limit Cost) bool {
	fits := func(c, rem, lim float64) bool { return c == 0 || c <= rem+lim*RelativeSlack }
	return fits(c.Epsilon, remaining.Epsilon, limit.Epsilon) && fits(c.Delta, remaining.Delta, limit.Delta)
}

func fitsComponent(spent *big.Rat, c, limit float64) bool {
	return fitsExact(spent, exact(c), limit)
}

// fitsTotal is fits for an exact sum of costs (the new charges of one
// transaction, ChargeAll).
func (t *total) fitsTotal(add *total, limit Cost) bool {
	return fitsExact(&t.eps, &add.eps, limit.Epsilon) && fitsExact(&t.delta, &add.delta, limit.Delta)
}

func fitsExact(spent, c *big.Rat, limit float64) bool {
	if c.Sign() == 0 {
		return true
	}
	var sum, bound big.Rat
	sum.Add(spent, c)
	bound.Mul(exact(limit), slackFactor)
	return sum.Cmp(&bound) <= 0
}

func remainder(limit float64, spent *big.Rat) float64 {
	var r big.Rat
	r.Sub(exact(limit), spent)
	if r.Sign() <= 0 {
		return 0
	}
	f, _ := r.Float64()
	if exact(f).Cmp(&r) > 0 {
		f = math.Nextafter(f, 0)
	}
	return f
}

// exact returns x as an exact rational; x must be finite.
func exact(x float64) *big.Rat {
	r := new(big.Rat).SetFloat64(x)
	if r == nil {
		panic(fmt.Sprintf("ledger: non-finite amount %g reached the exact sum", x))
	}
	return r
}

// encodeRat and decodeRat store exact totals as text ("num/den").
func encodeRat(r *big.Rat) string { return r.RatString() }

func decodeRat(s string) (*big.Rat, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok || r.Sign() < 0 {
		return nil, fmt.Errorf("ledger: corrupt stored total %q", s)
	}
	return r, nil
}
