package ledger

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/privbo/privbo/internal/figure"
)

// DisplayDigits is the number of significant decimal digits of the figures
// FormatSpent and FormatRemaining print for people.
const DisplayDigits = 6

// FormatSpent prints an exact total for people: rounded to the nearest number
// of DisplayDigits significant digits, so that the float64 representation of a
// decimal cost (1.9000000000000001 for a sum of 0.1s) never shows. Exact
// figures are for machines (big.Rat.RatString).
func FormatSpent(x *big.Rat) string {
	if x.Sign() == 0 {
		return "0"
	}
	return decimalText(roundSig(x, DisplayDigits, false))
}

// FormatRemaining prints an exact remainder for people, never more than a
// charge can spend: the nearest number of DisplayDigits significant digits
// when a charge of that amount fits the ledger's rule (a total may reach
// limit·(1 + RelativeSlack), see the package documentation), otherwise the
// remainder rounded toward zero to DisplayDigits digits. The first case only
// removes float64 noise (2.6109999999999998 prints as 2.611, which a charge
// can spend); a remainder is never rounded up to anything a charge could not
// spend. limit is the smallest limit the remainder is taken against.
func FormatRemaining(rem *big.Rat, limit float64) string {
	if rem.Sign() <= 0 {
		return "0"
	}
	near := roundSig(rem, DisplayDigits, false)
	if near.Cmp(rem) > 0 {
		over := new(big.Rat).Sub(near, rem)
		tol := new(big.Rat).Mul(exact(limit), new(big.Rat).Sub(slackFactor, big.NewRat(1, 1)))
		if over.Cmp(tol) > 0 {
			near = roundSig(rem, DisplayDigits, true)
		}
	}
	return decimalText(near)
}

// roundSig returns x > 0 rounded to n significant decimal digits, toward zero
// when down is set and otherwise to the nearest (halves away from zero).
func roundSig(x *big.Rat, n int, down bool) *big.Rat {
	// A first guess of the decimal exponent e, 10^e ≤ x < 10^(e+1), from the
	// binary exponent of x; corrected below.
	f := new(big.Float).SetPrec(64).SetRat(x)
	e := int(math.Floor(float64(f.MantExp(nil)-1) * math.Log10(2)))
	lo := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(n-1)), nil)
	hi := new(big.Int).Mul(lo, big.NewInt(10))
	for {
		scaled := new(big.Rat).Mul(x, pow10(n-1-e))
		q := new(big.Int).Quo(scaled.Num(), scaled.Denom()) // floor, scaled > 0
		switch {
		case q.Cmp(hi) >= 0:
			e++
			continue
		case q.Cmp(lo) < 0:
			e--
			continue
		}
		if !down {
			half := new(big.Rat).Add(scaled, big.NewRat(1, 2))
			q.Quo(half.Num(), half.Denom())
		}
		return new(big.Rat).Mul(new(big.Rat).SetInt(q), pow10(e-n+1))
	}
}

// pow10 returns 10^k as a rational.
func pow10(k int) *big.Rat {
	p := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(k, -k))), nil)
	if k < 0 {
		return new(big.Rat).SetFrac(big.NewInt(1), p)
	}
	return new(big.Rat).SetInt(p)
}

// decimalText prints a rational of at most a few significant digits as the
// shortest decimal (the float64 nearest to it prints back the same digits).
func decimalText(x *big.Rat) string {
	f, _ := x.Float64()
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// FormatBound prints an exact total for people rounded UP to DisplayDigits
// significant digits, so that the printed figure is still a bound on the total
// (the whole-patient statements: "no patient can lose more than ε = …").
func FormatBound(x *big.Rat) string {
	if x.Sign() <= 0 {
		return "0"
	}
	// The nearest figure when it is not below the total, or below it by no more than
	// the representation error of decimal costs (the ledger's RelativeSlack: 0.2 is
	// stored as 0.2000000000000000111, which prints as 0.2, not 0.200001).
	near := roundSig(x, DisplayDigits, false)
	if gap := new(big.Rat).Sub(x, near); gap.Sign() <= 0 || gap.Cmp(new(big.Rat).Mul(x, new(big.Rat).Sub(slackFactor, big.NewRat(1, 1)))) <= 0 {
		return decimalText(near)
	}
	r := roundSig(x, DisplayDigits, true)
	if r.Cmp(x) < 0 {
		// One unit of the last digit up: r has DisplayDigits digits, so its step is
		// r's leading power of ten times 10^(1−DisplayDigits).
		f, _ := r.Float64()
		e := int(math.Floor(math.Log10(f)))
		step := pow10(e - DisplayDigits + 1)
		up := new(big.Rat).Add(r, step)
		if up.Cmp(x) < 0 { // r's exponent guess was one too low
			up.Add(up, new(big.Rat).Mul(step, big.NewRat(9, 1)))
		}
		r = up
	}
	return decimalText(r)
}

// PatientStatement is a whole-patient total in one line a privacy officer can copy:
// who names the scope and the releases it counts ("dataset X: every release to every
// identity, and the curator's own estimates"), cap is the scope's whole-patient cap
// (zero ε: none). For a total that is not bounded it says so and why, with the sum of
// the releases that do have a figure.
func PatientStatement(who string, t PatientTotal, cap Cost) string {
	capText := "no whole-patient cap is set"
	if cap.Epsilon > 0 {
		capText = fmt.Sprintf("the ledger caps it at ε = %s, δ = %s", figure.Text(cap.Epsilon), figure.Text(cap.Delta))
	}
	if !t.Bounded() {
		return fmt.Sprintf("Whole patient (%s): NOT BOUNDED — %d of %d releases have no finite guarantee for replacing one patient's record by any other "+
			"(exact answers, a job that trains on records with no mechanism, a data-dependent scaling or the lifted mechanism); "+
			"the others add up to ε = %s, δ = %s; %s.", who, t.Unbounded, t.Charges, FormatBound(t.Epsilon), FormatBound(t.Delta), capText)
	}
	return fmt.Sprintf("Whole patient (%s): no patient can lose more than ε = %s, δ = %s from these releases — each release's (ε, δ) "+
		"for replacing one patient's record by any other, added by basic composition over %s and every neighbour relation; %s.",
		who, FormatBound(t.Epsilon), FormatBound(t.Delta), releasesText(t.Charges), capText)
}

// releasesText is "1 release" or "n releases".
func releasesText(n int64) string {
	if n == 1 {
		return "1 release"
	}
	return strconv.FormatInt(n, 10) + " releases"
}
