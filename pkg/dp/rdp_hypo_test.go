package dp_test

import (
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
)

// gammaForMean solves NegBinMean(θ, γ) = mean for γ by bisection on log γ
// (the mean decreases in γ).
func gammaForMean(t *testing.T, theta, mean float64) float64 {
	t.Helper()
	lo, hi := math.Log(1e-300), 0.0
	for range 300 {
		mid := (lo + hi) / 2
		if dp.NegBinMean(theta, math.Exp(mid)) > mean {
			lo = mid
		} else {
			hi = mid
		}
	}
	g := math.Exp((lo + hi) / 2)
	if relErr(dp.NegBinMean(theta, g), mean) > 1e-9 {
		t.Fatalf("gammaForMean(θ=%g, %g) = %g with mean %g", theta, mean, g, dp.NegBinMean(theta, g))
	}
	return g
}

// TestRepeatAndSelectVectors checks the vectors of docs/MATHS.md §4.4
// (Papernot & Steinke 2022, Theorem 2; Wang et al. 2023, Theorem 1): a
// Gaussian base mechanism (Δ = 1), repeat-and-select with E[K] = 10, converted at
// δ = 1e-5 with the improved conversion. The 4-digit reference values were
// computed with α and α̂ on a grid of step 0.1 (a step of 0.01 changes the
// fourth digit, e.g. 8.5135 instead of 8.5145), so the test uses TF-Privacy's
// grid, whose orders below 11 have that step; tolerance half a unit in the
// last digit.
func TestRepeatAndSelectVectors(t *testing.T) {
	tests := []struct {
		sigma, eta, want, gamma float64 // gamma: reference value, 0 = not given
	}{
		{1, 1, 8.5145, 0.1},
		{1, 0, 7.4104, 0.026918260},
		{1, 0.5, 8.0044, 0.0625},
		{1, 2, 9.3618, 0},
		{5, 1, 1.7183, 0.1},
	}
	for _, tc := range tests {
		g := gammaForMean(t, tc.eta, 10)
		if tc.gamma != 0 && math.Abs(g-tc.gamma) > 5e-9 {
			t.Errorf("γ for E[K]=10, η=%g = %.9f, want %.9f", tc.eta, g, tc.gamma)
		}
		base, _ := dp.GaussianRDP(dp.LibraryOrders(), 1, tc.sigma)
		c, err := dp.DPHyPORDP(base, base, tc.eta, g, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		eps, _, _ := c.ToDPImproved(1e-5)
		if math.Abs(eps-tc.want) > 5e-5 {
			t.Errorf("repeat-and-select σ=%g η=%g E[K]=10: ε = %.6f, want %.4f", tc.sigma, tc.eta, eps, tc.want)
		}
	}
}

// TestPureDPSearch checks Theorem 2 (DP-HyPO) / Corollary 3 (Papernot &
// Steinke): ε = 1 base runs give 2 + η, both from DPHyPOPure and as the
// α = α̂ = ∞ limit of Theorem 1; with C/c ≠ 1 the two still agree.
func TestPureDPSearch(t *testing.T) {
	inf := []float64{math.Inf(1)}
	for _, tc := range []struct{ mean, eta float64 }{
		{1000, 0}, {1000, 1}, {1000, 0.5}, {100, 2}, {1000, 5},
	} {
		g := gammaForMean(t, tc.eta, tc.mean)
		pure, err := dp.DPHyPOPure(1, tc.eta, 1, 1)
		if err != nil || relErr(pure, 2+tc.eta) > 1e-15 {
			t.Errorf("DPHyPOPure(1, η=%g, 1, 1) = %g, %v, want %g", tc.eta, pure, err, 2+tc.eta)
		}
		base, _ := dp.PureDPRDP(inf, 1)
		c, err := dp.DPHyPORDP(base, base, tc.eta, g, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		eps, _, _ := c.ToDP(0)
		if relErr(eps, 2+tc.eta) > 1e-15 {
			t.Errorf("DPHyPORDP at α=α̂=∞ (mean %g, η=%g) = %g, want %g", tc.mean, tc.eta, eps, 2+tc.eta)
		}
		for _, r := range [][2]float64{{2, 0.75}, {3, 1}, {1, 0.5}} {
			pure, _ := dp.DPHyPOPure(1, tc.eta, r[0], r[1])
			c, _ := dp.DPHyPORDP(base, base, tc.eta, g, r[0], r[1])
			if relErr(c.Epsilons[0], pure) > 1e-14 {
				t.Errorf("C=%g c=%g η=%g: Theorem 1 at ∞ = %.15g, Theorem 2 = %.15g", r[0], r[1], tc.eta, c.Epsilons[0], pure)
			}
		}
	}
}

// TestHyPOEqualsPapernotSteinke checks that with C = c = 1 Theorem 1 of
// DP-HyPO is Theorem 2 of Papernot & Steinke, evaluated here directly from
// the latter's statement (λ̂ over the grid and λ̂ = 1), and that C/c > 1 adds
// exactly (α/(α−1) + 1 + θ) log(C/c).
func TestHyPOEqualsPapernotSteinke(t *testing.T) {
	orders := dp.DefaultOrders()
	base, _ := dp.SubsampledGaussianRDP(orders, 0.01, 1.1, 3000)
	for _, eta := range []float64{-0.5, 0, 0.5, 1, 3} {
		for _, g := range []float64{0.01, 0.2, 0.7} {
			c, err := dp.DPHyPORDP(base, base, eta, g, 1, 1)
			if err != nil {
				t.Fatal(err)
			}
			lifted, _ := dp.DPHyPORDP(base, base, eta, g, 2, 0.75)
			for i, l := range orders {
				hat := (1 + eta) * math.Log(1/g) // λ̂ = 1
				for j, lh := range orders {
					hat = math.Min(hat, (1+eta)*(1-1/lh)*base.Epsilons[j]+(1+eta)*math.Log(1/g)/lh)
				}
				ps := base.Epsilons[i] + hat + math.Log(dp.NegBinMean(eta, g))/(l-1)
				if relErr(c.Epsilons[i], ps) > 1e-13 {
					t.Errorf("η=%g γ=%g α=%g: DP-HyPO(C=c=1) = %.15g, Papernot–Steinke = %.15g", eta, g, l, c.Epsilons[i], ps)
				}
				extra := (l/(l-1) + 1 + eta) * math.Log(2/0.75)
				if relErr(lifted.Epsilons[i]-c.Epsilons[i], extra) > 1e-9 {
					t.Errorf("η=%g γ=%g α=%g: C=2, c=0.75 adds %.12g, want %.12g", eta, g, l, lifted.Epsilons[i]-c.Epsilons[i], extra)
				}
			}
		}
	}
}

// TestHyPOMeanOne checks that as E[T] → 1 (γ → 1, so T = 1 almost
// surely) the bound tends to the base curve: the λ̂ = 1 term and log E[T]
// vanish.
func TestHyPOMeanOne(t *testing.T) {
	base, _ := dp.GaussianRDP(dp.DefaultOrders(), 1, 2)
	for _, eta := range []float64{0, 1, 2.5} {
		g := 1 - 1e-12
		c, err := dp.DPHyPORDP(base, base, eta, g, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		for i := range base.Orders {
			if math.Abs(c.Epsilons[i]-base.Epsilons[i]) > 1e-10 {
				t.Errorf("η=%g, γ=1−1e-12, α=%g: %.15g, want the base %.15g", eta, base.Orders[i], c.Epsilons[i], base.Epsilons[i])
			}
		}
	}
}

// TestNegBinMean checks the closed forms against direct sums of the pmf.
func TestNegBinMean(t *testing.T) {
	for _, tc := range []struct{ theta, gamma float64 }{
		{1, 0.1}, {0, 0.05}, {0.5, 0.0625}, {2, 0.3}, {-0.5, 0.2}, {5, 0.5}, {1e-9, 0.05},
	} {
		// P[T=k] ∝ (1−γ)^k Π_{ℓ<k} (ℓ+θ)/(ℓ+1) (θ = 0: (1−γ)^k/k).
		var z, m float64
		w := 1.0
		for k := 1; k < 20000; k++ {
			var p float64
			if tc.theta == 0 {
				p = math.Pow(1-tc.gamma, float64(k)) / float64(k)
			} else {
				w *= (float64(k-1) + tc.theta) / float64(k)
				p = w * math.Pow(1-tc.gamma, float64(k))
			}
			z += p
			m += float64(k) * p
		}
		if got, want := dp.NegBinMean(tc.theta, tc.gamma), m/z; relErr(got, want) > 1e-9 {
			t.Errorf("NegBinMean(%g, %g) = %.12g, want %.12g (direct sum)", tc.theta, tc.gamma, got, want)
		}
	}
	if got := dp.NegBinMean(1, 0.25); got != 4 {
		t.Errorf("NegBinMean(1, 0.25) = %g, want 4 (geometric)", got)
	}
	for _, bad := range [][2]float64{{-1, 0.5}, {1, 0}, {1, 1}, {math.NaN(), 0.5}} {
		if got := dp.NegBinMean(bad[0], bad[1]); !math.IsNaN(got) {
			t.Errorf("NegBinMean(%g, %g) = %g, want NaN", bad[0], bad[1], got)
		}
	}
}

// TestHyPOValidation checks the bad specs of the issue: c > 1, C < 1,
// γ ∉ (0, 1), θ ≤ −1.
func TestHyPOValidation(t *testing.T) {
	base, _ := dp.GaussianRDP([]float64{2, 3}, 1, 1)
	for _, p := range []struct{ theta, gamma, bigC, smallC float64 }{
		{1, 0.1, 2, 1.5}, {1, 0.1, 0.5, 0.5}, {1, 0, 1, 1}, {1, 1, 1, 1}, {-1, 0.1, 1, 1},
		{math.Inf(1), 0.1, 1, 1}, {1, 0.1, math.Inf(1), 1}, {1, 0.1, 1, 0},
	} {
		if _, err := dp.DPHyPORDP(base, base, p.theta, p.gamma, p.bigC, p.smallC); err == nil {
			t.Errorf("DPHyPORDP(θ=%g, γ=%g, C=%g, c=%g): no error", p.theta, p.gamma, p.bigC, p.smallC)
		}
		if p.gamma > 0 && p.gamma < 1 {
			if _, err := dp.DPHyPOPure(1, p.theta, p.bigC, p.smallC); err == nil {
				t.Errorf("DPHyPOPure(θ=%g, C=%g, c=%g): no error", p.theta, p.bigC, p.smallC)
			}
		}
	}
	if _, err := dp.DPHyPOPure(-1, 1, 1, 1); err == nil {
		t.Error("DPHyPOPure(ε=−1): no error")
	}
}
