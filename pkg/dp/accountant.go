package dp

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Rényi differential privacy accounting.
//
// A mechanism M is (α, ε)-RDP (Mironov, "Rényi Differential Privacy", CSF
// 2017) if D_α(M(D) ‖ M(D')) ≤ ε for all neighbouring D, D', where
//
//	D_α(P ‖ Q) = (1/(α−1)) log E_Q[(P/Q)^α],  α > 1,
//
// and D_∞(P ‖ Q) = log sup P/Q, so (∞, ε)-RDP is (ε, 0)-DP. An RDPCurve
// records ε(α) on a finite grid of orders; curves of mechanisms run in
// sequence add order by order (Compose), and a curve converts to (ε, δ)-DP
// by minimising a conversion bound over the grid (ToDP, ToDPImproved).

// RDPCurve is a Rényi-DP guarantee ε(α) at each order α: Epsilons[i] is ε at
// Orders[i]. Orders are > 1 and may include +Inf (pure DP); epsilons are
// ≥ 0 and may be +Inf (no guarantee at that order).
type RDPCurve struct {
	Orders, Epsilons []float64
}

// DefaultOrders returns the order grid used by privbo when a caller does not
// choose one: 1.25, 1.5, 1.75, 2, 3, …, 64, 80, 96, 128, 256. Every mechanism
// of this file is exact at fractional orders except the Poisson-subsampled
// Gaussian, whose default (SubsampledGaussianRDP) is a declared upper bound
// there. The slice is new on every call.
func DefaultOrders() []float64 {
	o := []float64{1.25, 1.5, 1.75}
	for a := 2; a <= 64; a++ {
		o = append(o, float64(a))
	}
	return append(o, 80, 96, 128, 256)
}

// LibraryOrders returns the order grid of TF-Privacy's and Opacus's DP-SGD
// accountants: 1.1, 1.2, …, 10.9, 12, 13, …, 63. The golden vectors of
// docs/MATHS.md §4.4 and §6.3 were computed on it. The slice is new on every call.
func LibraryOrders() []float64 {
	o := make([]float64, 0, 99+52)
	for x := 1; x < 100; x++ {
		o = append(o, 1+float64(x)/10)
	}
	for a := 12; a < 64; a++ {
		o = append(o, float64(a))
	}
	return o
}

// Validate reports whether c is a usable curve: equal lengths, at least one
// order, orders > 1 (or +Inf) without repeats, epsilons ≥ 0 (or +Inf).
func (c RDPCurve) Validate() error {
	if len(c.Orders) != len(c.Epsilons) {
		return fmt.Errorf("dp: RDP curve has %d orders but %d epsilons", len(c.Orders), len(c.Epsilons))
	}
	if len(c.Orders) == 0 {
		return errors.New("dp: RDP curve has no orders")
	}
	if err := validateOrders(c.Orders); err != nil {
		return err
	}
	for i, e := range c.Epsilons {
		if !(e >= 0) {
			return fmt.Errorf("dp: RDP epsilon at order %g must be ≥ 0, got %g", c.Orders[i], e)
		}
	}
	return nil
}

func validateOrders(orders []float64) error {
	if len(orders) == 0 {
		return errors.New("dp: no RDP orders given")
	}
	seen := make(map[float64]bool, len(orders))
	for _, a := range orders {
		if !(a > 1) {
			return fmt.Errorf("dp: RDP orders must be > 1 (or +Inf), got %g", a)
		}
		if seen[a] {
			return fmt.Errorf("dp: RDP order %g appears twice", a)
		}
		seen[a] = true
	}
	return nil
}

// GaussianRDP returns the curve of the Gaussian mechanism with noise standard
// deviation sigma on a query of L2 sensitivity Δ: ε(α) = α Δ² / (2σ²)
// (Mironov 2017, Proposition 7), +Inf at α = ∞. Exact at every order.
func GaussianRDP(orders []float64, sensitivity, sigma float64) (RDPCurve, error) {
	if err := ValidateSensitivity(sensitivity); err != nil {
		return RDPCurve{}, err
	}
	if !(sigma > 0) || math.IsInf(sigma, 0) {
		return RDPCurve{}, fmt.Errorf("dp: Gaussian sigma must be positive and finite, got %g", sigma)
	}
	if err := validateOrders(orders); err != nil {
		return RDPCurve{}, err
	}
	r := sensitivity / sigma
	return curveOf(orders, func(a float64) float64 { return a * r * r / 2 }), nil
}

// LaplaceRDP returns the curve of the Laplace mechanism with scale b on a
// query of L1 sensitivity Δ, ε₀ = Δ/b (Mironov 2017, Proposition 6):
//
//	ε(α) = (1/(α−1)) log[ α/(2α−1) e^{(α−1)ε₀} + (α−1)/(2α−1) e^{−αε₀} ],
//
// and ε(∞) = ε₀. Exact at every order; computed in log space.
func LaplaceRDP(orders []float64, sensitivity, scale float64) (RDPCurve, error) {
	if err := ValidateSensitivity(sensitivity); err != nil {
		return RDPCurve{}, err
	}
	if !(scale > 0) || math.IsInf(scale, 0) {
		return RDPCurve{}, fmt.Errorf("dp: Laplace scale must be positive and finite, got %g", scale)
	}
	if err := validateOrders(orders); err != nil {
		return RDPCurve{}, err
	}
	e0 := sensitivity / scale
	return curveOf(orders, func(a float64) float64 {
		if math.IsInf(a, 1) {
			return e0
		}
		l := logAddExp(math.Log(a/(2*a-1))+(a-1)*e0, math.Log((a-1)/(2*a-1))-a*e0)
		return math.Min(e0, math.Max(0, l/(a-1)))
	}), nil
}

// PureDPRDP returns the curve of an (ε, 0)-DP mechanism: the exact worst
// case, randomized response with P[truth] = e^ε/(1+e^ε), which every ε-DP
// pair of distributions is a post-processing of (Kairouz, Oh & Viswanath,
// ICML 2015), so by data processing
//
//	ε(α) = (1/(α−1)) log[(e^{αε} + e^{(1−α)ε}) / (1 + e^ε)]
//	     = ε + [log1p(e^{(1−2α)ε}) − log1p(e^{−ε})]/(α−1),
//
// which is ≤ min(ε, αε²/2) (Bun & Steinke, TCC 2016, Proposition 3.3); the
// result is the minimum of the three expressions, so rounding can only
// make it smaller than the exact worst case by an ulp, never larger than
// either published bound. ε(∞) = ε.
func PureDPRDP(orders []float64, eps float64) (RDPCurve, error) {
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return RDPCurve{}, fmt.Errorf("dp: pure-DP epsilon must be ≥ 0 and finite, got %g", eps)
	}
	if err := validateOrders(orders); err != nil {
		return RDPCurve{}, err
	}
	return curveOf(orders, func(a float64) float64 {
		if math.IsInf(a, 1) || eps == 0 {
			return eps
		}
		rr := eps + (math.Log1p(math.Exp((1-2*a)*eps))-math.Log1p(math.Exp(-eps)))/(a-1)
		return math.Max(0, math.Min(rr, math.Min(eps, a*eps*eps/2)))
	}), nil
}

func curveOf(orders []float64, f func(a float64) float64) RDPCurve {
	c := RDPCurve{Orders: slices.Clone(orders), Epsilons: make([]float64, len(orders))}
	for i, a := range orders {
		c.Epsilons[i] = f(a)
	}
	return c
}

// Compose returns the curve of running c and each of others in sequence
// (adaptively): ε(α) = Σ ε_i(α) at each order (Mironov 2017, Proposition 1).
// All curves must have the same orders in the same sequence.
func (c RDPCurve) Compose(others ...RDPCurve) (RDPCurve, error) {
	if err := c.Validate(); err != nil {
		return RDPCurve{}, err
	}
	out := RDPCurve{Orders: slices.Clone(c.Orders), Epsilons: slices.Clone(c.Epsilons)}
	for k, o := range others {
		if err := o.Validate(); err != nil {
			return RDPCurve{}, fmt.Errorf("dp: composing curve %d: %w", k+1, err)
		}
		if !slices.Equal(o.Orders, c.Orders) {
			return RDPCurve{}, fmt.Errorf("dp: composing curve %d: its orders differ from the first curve's (%d vs %d orders)", k+1, len(o.Orders), len(c.Orders))
		}
		for i, e := range o.Epsilons {
			out.Epsilons[i] += e
		}
	}
	return out, nil
}

// Scale returns the curve of k-fold composition of c with itself,
// ε(α) ↦ k ε(α), for a finite k ≥ 0 (k need not be an integer, for callers
// that scale a per-unit cost).
func (c RDPCurve) Scale(k float64) (RDPCurve, error) {
	if err := c.Validate(); err != nil {
		return RDPCurve{}, err
	}
	if !(k >= 0) || math.IsInf(k, 0) {
		return RDPCurve{}, fmt.Errorf("dp: RDP scale factor must be ≥ 0 and finite, got %g", k)
	}
	out := RDPCurve{Orders: slices.Clone(c.Orders), Epsilons: make([]float64, len(c.Epsilons))}
	for i, e := range c.Epsilons {
		if k == 0 {
			out.Epsilons[i] = 0 // 0·Inf: running a mechanism zero times costs nothing
			continue
		}
		out.Epsilons[i] = k * e
	}
	return out, nil
}

// ToDP converts c to (ε, δ)-DP with the standard bound (Mironov 2017,
// Proposition 3): ε = min_α ε(α) + log(1/δ)/(α−1), and at α = ∞,
// ε = ε(∞) for any δ ≥ 0. It returns the minimum and the order attaining
// it; ε = +Inf (order NaN) when no order gives a finite bound.
func (c RDPCurve) ToDP(delta float64) (eps, order float64, err error) {
	return c.toDP(delta, false)
}

// ToDPImproved converts c to (ε, δ)-DP with the bound of Balle, Barthe,
// Gaboardi, Hsu & Sato (AISTATS 2020, Theorem 21) and Canonne, Kamath &
// Steinke (2020, Proposition 12):
//
//	ε = min_α ε(α) + log1p(−1/α) − log(δ α)/(α−1),
//
// taking at each order the smaller of this and the standard bound, so it is
// never worse than ToDP.
func (c RDPCurve) ToDPImproved(delta float64) (eps, order float64, err error) {
	return c.toDP(delta, true)
}

func (c RDPCurve) toDP(delta float64, improved bool) (float64, float64, error) {
	if err := c.Validate(); err != nil {
		return 0, 0, err
	}
	if err := ValidateDelta(delta); err != nil {
		return 0, 0, err
	}
	best, bestOrder := math.Inf(1), math.NaN()
	for i, a := range c.Orders {
		e := ConvertRDP(a, c.Epsilons[i], delta, improved)
		if e < best {
			best, bestOrder = e, a
		}
	}
	return best, bestOrder, nil
}

// ConvertRDP converts a single (α, ε_α)-RDP guarantee to the ε of
// (ε, δ)-DP: the standard bound ε_α + log(1/δ)/(α−1), or with improved the
// minimum of it and ε_α + log1p(−1/α) − log(δα)/(α−1). At α = ∞ it returns
// ε_α. Inputs are not validated (see RDPCurve.ToDP).
func ConvertRDP(alpha, epsAlpha, delta float64, improved bool) float64 {
	if math.IsInf(alpha, 1) {
		return epsAlpha
	}
	if delta == 0 || math.IsInf(epsAlpha, 1) {
		return math.Inf(1)
	}
	e := epsAlpha + math.Log(1/delta)/(alpha-1)
	if improved {
		e = math.Min(e, epsAlpha+math.Log1p(-1/alpha)-math.Log(delta*alpha)/(alpha-1))
	}
	return math.Max(0, e)
}

func logAddExp(a, b float64) float64 {
	if a < b {
		a, b = b, a
	}
	if math.IsInf(b, -1) {
		return a
	}
	return a + math.Log1p(math.Exp(b-a))
}
