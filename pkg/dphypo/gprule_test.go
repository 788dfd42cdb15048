package dphypo

import (
	"context"
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/dp/dptest"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
)

// TestGPRuleMatchesDense pins the GP instantiation of DP-HyPO (Wang et
// al. 2023, Algorithm 3; docs/MATHS.md §4.3): after the scores seen so far, the next sampling
// distribution is π(λ) ∝ exp(β s_λ) with s_λ = µ_λ + τ σ_λ, where µ and σ² are
// the posterior of a GP with a Matérn 5/2 kernel (unit signal variance) fitted
// to the standardised scores. The reference computes that posterior densely,
// with gonum's Cholesky of K + σ_n² I, and the softmax in the obvious way.
func TestGPRuleMatchesDense(t *testing.T) {
	// Seven candidates on a line, the first three of them observed (one twice).
	cands := []float64{0, 0.5, 1.2, 2, 2.1, 3.5, 5}
	obs := []struct {
		i int
		q float64
	}{{1, 0.62}, {4, 0.81}, {6, 0.40}, {4, 0.77}}
	for _, c := range []struct {
		name                    string
		tau, beta, ls, noiseVar float64
	}{
		{"paper settings", 0.1, 1, 1.5, 0.1},
		{"large tau and beta", 2, 7, 0.8, 0.05},
		{"default lengthscale and noise", 0.5, 3, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Theta: 1, Gamma: 0.5, C: 2, Cmin: 0.75, Tau: c.tau, Beta: c.beta,
				Lengthscale: c.ls, NoiseVariance: c.noiseVar, Candidates: cands, N: len(cands), Dim: 1}
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			gp, err := newScoreGP(cfg, len(obs))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range obs {
				if err := gp.Observe(o.i, o.q); err != nil {
					t.Fatal(err)
				}
			}
			pi := make([]float64, len(cands))
			softmaxScores(gp, c.tau, c.beta, make([]float64, len(cands)), pi)

			ls, nv := c.ls, c.noiseVar
			if ls == 0 {
				// The default: the median distance of the candidates to their mean.
				mean := stat.Mean(cands, nil)
				d := make([]float64, len(cands))
				for k, x := range cands {
					d[k] = math.Abs(x - mean)
				}
				ls = median(d)
			}
			if nv == 0 {
				nv = DefaultNoiseVariance
			}
			want := densePi(cands, obs, ls, nv, c.tau, c.beta)
			for k := range pi {
				if math.Abs(pi[k]-want[k]) > 1e-9 {
					t.Errorf("π(%d) = %.12f, want %.12f (dense reference)", k, pi[k], want[k])
				}
			}
		})
	}
}

func median(x []float64) float64 {
	s := append([]float64(nil), x...)
	for i := range s { // insertion sort: the reference stays independent of the code's sort
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// densePi computes π ∝ exp(β(µ + τσ)) from a dense GP posterior on the
// standardised scores ỹ = (q − m)/s (m the mean, s the sample standard
// deviation), reported in score units: µ = m + s k*ᵀ A⁻¹ ỹ, σ² = s² (1 − k*ᵀ A⁻¹ k*),
// A = K + σ_n² I.
func densePi(cands []float64, obs []struct {
	i int
	q float64
}, ls, nv, tau, beta float64) []float64 {
	matern := func(a, b float64) float64 {
		r := math.Sqrt(5) * math.Abs(a-b) / ls
		return (1 + r + r*r/3) * math.Exp(-r)
	}
	t := len(obs)
	qs := make([]float64, t)
	for k, o := range obs {
		qs[k] = o.q
	}
	m, s := stat.MeanStdDev(qs, nil)
	a := mat.NewSymDense(t, nil)
	ytil := mat.NewVecDense(t, nil)
	for j := range t {
		ytil.SetVec(j, (qs[j]-m)/s)
		for k := range t {
			v := matern(cands[obs[j].i], cands[obs[k].i])
			if j == k {
				v += nv
			}
			a.SetSym(j, k, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		panic("dense reference: K + σ_n² I is not positive definite")
	}
	var alpha mat.VecDense
	if err := ch.SolveVecTo(&alpha, ytil); err != nil {
		panic(err)
	}
	logits := make([]float64, len(cands))
	mx := math.Inf(-1)
	for i, z := range cands {
		kstar := mat.NewVecDense(t, nil)
		for j := range t {
			kstar.SetVec(j, matern(z, cands[obs[j].i]))
		}
		var w mat.VecDense
		if err := ch.SolveVecTo(&w, kstar); err != nil {
			panic(err)
		}
		mu := m + s*mat.Dot(kstar, &alpha)
		v := s * s * math.Max(1-mat.Dot(kstar, &w), 0)
		logits[i] = beta * (mu + tau*math.Sqrt(v))
		mx = math.Max(mx, logits[i])
	}
	pi := make([]float64, len(cands))
	var z float64
	for i, l := range logits {
		pi[i] = math.Exp(l - mx)
		z += pi[i]
	}
	for i := range pi {
		pi[i] /= z
	}
	return pi
}

// scriptedBase returns a fixed score per grid point.
type scriptedBase []float64

func (s scriptedBase) Run(_ context.Context, i int) (float64, error) { return s[i], nil }

// TestRunScoreScale checks, through Run's operator progress, the distribution each run's
// point is drawn from: after the runs so far, π ∝ exp(β' s) with s the GP score in the
// score's own units and β' = β for ScaleRaw, β/sd for ScaleStandardised (sd the sample
// standard deviation of the scores seen, 1 until there are two). Density bounds wide
// enough never to bind (C = 1e6, c = 1e-6) make π̃ = π.
func TestRunScoreScale(t *testing.T) {
	cands := []float64{0, 0.5, 1.2, 2, 2.1, 3.5, 5}
	scores := scriptedBase{0.61, 0.62, 0.70, 0.74, 0.81, 0.55, 0.40}
	for _, scale := range []ScoreScale{ScaleRaw, ScaleStandardised} {
		t.Run(scale.String(), func(t *testing.T) {
			cfg := Config{Theta: 1, Gamma: 0.02, C: 1e6, Cmin: 1e-6, Tau: 0.1, Beta: 1, Lengthscale: 1.5, NoiseVariance: 0.1,
				Candidates: cands, N: len(cands), Dim: 1, Scale: scale}
			var obs []struct {
				i int
				q float64
			}
			checked := 0
			_, err := Run(context.Background(), dptest.Source(3), cfg, scores, func(p Progress) {
				if len(obs) >= 1 && len(obs) <= 6 {
					beta := 1.0
					if scale == ScaleStandardised && len(obs) >= 2 {
						qs := make([]float64, len(obs))
						for k, o := range obs {
							qs[k] = o.q
						}
						beta /= stat.StdDev(qs, nil)
					}
					want := densePi(cands, obs, 1.5, 0.1, 0.1, beta)
					for k := range want {
						if math.Abs(p.Sampling[k]-want[k]) > 1e-9 {
							t.Errorf("run %d: π̃(%d) = %.12f, want %.12f", p.Run, k, p.Sampling[k], want[k])
						}
					}
					checked++
				}
				obs = append(obs, struct {
					i int
					q float64
				}{p.Index, p.Score})
			})
			if err != nil {
				t.Fatal(err)
			}
			if checked < 3 {
				t.Fatalf("only %d runs checked (the run count drawn was too small for this seed)", checked)
			}
		})
	}
	// Standardised scores move π far more than raw accuracies for β = 1: the spread of
	// log π over the grid after the seven scores.
	spread := map[ScoreScale]float64{}
	for _, scale := range []ScoreScale{ScaleRaw, ScaleStandardised} {
		cfg := Config{Theta: 1, Gamma: 0.02, C: 1e6, Cmin: 1e-6, Tau: 0.1, Beta: 1, Candidates: cands, N: len(cands), Dim: 1, Scale: scale}
		gp, err := newScoreGP(cfg, 7)
		if err != nil {
			t.Fatal(err)
		}
		var seen scoreMoments
		for i, q := range scores {
			if err := gp.Observe(i, q); err != nil {
				t.Fatal(err)
			}
			seen.add(q)
		}
		beta := 1.0
		if scale == ScaleStandardised {
			beta /= seen.sd()
		}
		pi := make([]float64, len(cands))
		softmaxScores(gp, 0.1, beta, make([]float64, len(cands)), pi)
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range pi {
			lo, hi = math.Min(lo, math.Log(p)), math.Max(hi, math.Log(p))
		}
		spread[scale] = hi - lo
	}
	if !(spread[ScaleRaw] < 0.5 && spread[ScaleStandardised] > 2) {
		t.Errorf("spread of log π: raw %.3f, standardised %.3f; want raw < 0.5 (nearly uniform) and standardised > 2", spread[ScaleRaw], spread[ScaleStandardised])
	}
}
