package dp

import (
	"fmt"
	"math"
	"slices"
)

// Group privacy: what a guarantee for one neighbouring step means for datasets
// that are several steps apart. privbo needs it where a release is stated for
// adding or removing one record and a patient's record is replaced (a removal
// followed by an addition: two steps), and where a whole patient moves a
// feature vector by many protected units (VectorGaussian.RhoAtDistance, at the
// clip diameter).

// GroupPrivacy returns the (ε, δ) for datasets k ≥ 1 steps apart of an
// (eps, delta)-DP mechanism: (kε, δ·Σ_{i<k} e^{iε}). It follows from the
// definition by chaining k neighbouring steps D₀ ~ D₁ ~ … ~ D_k: for every event S,
// P[M(D₀) ∈ S] ≤ e^ε P[M(D₁) ∈ S] + δ ≤ e^{2ε} P[M(D₂) ∈ S] + (1 + e^ε)δ ≤ …
// (Dwork & Roth 2014, Theorem 2.2 for δ = 0; the δ term is the same chaining). For
// k = 2, the replacement of one record by add-then-remove, it is (2ε, (1 + e^ε)δ).
// The δ it returns may be ≥ 1 (the guarantee then says nothing); callers check.
func GroupPrivacy(eps, delta float64, k int) (float64, float64, error) {
	if k < 1 {
		return 0, 0, fmt.Errorf("dp: group size must be at least 1, got %d", k)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		return 0, 0, fmt.Errorf("dp: epsilon must be finite and ≥ 0, got %g", eps)
	}
	if !(delta >= 0) || delta >= 1 {
		return 0, 0, fmt.Errorf("dp: delta must be in [0, 1), got %g", delta)
	}
	var sum float64 // Σ_{i<k} e^{iε}, rounded up
	for i := range k {
		sum += math.Exp(float64(i) * eps)
	}
	up := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
	d := 0.0
	if delta > 0 {
		d = up(delta * up(sum))
	}
	return float64(k) * eps, d, nil
}

// GroupOfTwo returns the Rényi-DP curve for datasets two neighbouring steps apart
// (a record removed, then another added: one record replaced, for a mechanism
// stated for adding or removing one record), by the weak triangle inequality of
// Rényi divergence with p = q = 2 (Mironov 2017, Proposition 11): for P = M(D₀),
// Q = M(D₁), R = M(D₂) with D₀ ~ D₁ ~ D₂,
//
//	D_α(P ‖ R) ≤ (α − ½)/(α − 1) · D_{2α}(P ‖ Q) + D_{2α−1}(Q ‖ R),
//
// so ε₂(α) = (α − ½)/(α − 1) ε(2α) + ε(2α − 1). The orders 2α and 2α − 1 need
// not be on c's grid: Rényi divergence does not decrease with the order (van Erven
// & Harremoës 2014, Theorem 3), so ε at the smallest grid order at or above each
// is an upper bound; with none, ε₂(α) = +Inf. At α = ∞ it is 2ε(∞) (the triangle
// inequality of the max-divergence). The result has c's orders.
func (c RDPCurve) GroupOfTwo() (RDPCurve, error) {
	if err := c.Validate(); err != nil {
		return RDPCurve{}, err
	}
	type point struct{ a, e float64 }
	pts := make([]point, len(c.Orders))
	for i, a := range c.Orders {
		pts[i] = point{a, c.Epsilons[i]}
	}
	slices.SortFunc(pts, func(x, y point) int {
		switch {
		case x.a < y.a:
			return -1
		case x.a > y.a:
			return 1
		}
		return 0
	})
	// at returns ε at the smallest order ≥ b, +Inf if there is none.
	at := func(b float64) float64 {
		for _, p := range pts {
			if p.a >= b {
				return p.e
			}
		}
		return math.Inf(1)
	}
	out := RDPCurve{Orders: slices.Clone(c.Orders), Epsilons: make([]float64, len(c.Orders))}
	for i, a := range c.Orders {
		if math.IsInf(a, 1) {
			out.Epsilons[i] = 2 * c.Epsilons[i]
			continue
		}
		e1, e2 := at(2*a), at(2*a-1)
		if math.IsInf(e1, 1) || math.IsInf(e2, 1) {
			out.Epsilons[i] = math.Inf(1)
			continue
		}
		out.Epsilons[i] = math.Nextafter((a-0.5)/(a-1)*e1+e2, math.Inf(1))
	}
	return out, nil
}

// RhoAtDistance returns ρ_D: the release is ρ_D-zCDP for inputs whose difference
// has L2 norm at most units·Δ (Canonne, Kamath & Steinke 2020, Theorem 14; see
// EpsilonAtDistance, which converts it at a δ). Releases that are ρᵢ-zCDP compose
// to Σρᵢ-zCDP (Bun & Steinke 2016, Lemma 2.3). units must be positive and finite.
func (g *VectorGaussian) RhoAtDistance(units float64) (float64, error) {
	if !(units > 0) || math.IsInf(units, 0) {
		return 0, fmt.Errorf("dp: distance must be positive and finite, got %g units", units)
	}
	return g.rhoAtDistance(units), nil
}
