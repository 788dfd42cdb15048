package gpucb

import (
	"fmt"
	"math"
)

// Acquisition is a rule that chooses the candidate to observe next from a posterior,
// separate from the posterior itself (as gonum's optimize.Method is from the problem):
// UCB is the first; another rule (expected improvement, Thompson sampling) is one more
// type with a Next method, usually one scan of Posterior.Argmax or ArgmaxUpper.
type Acquisition interface {
	// Next returns the candidate to observe next under p, or an error if no candidate
	// qualifies. It does not change p.
	Next(p *Posterior) (int, error)
}

// UCB is GP-UCB's rule (Srinivas, Krause, Kakade and Seeger 2010): the candidate
// maximising µ(z) + √β_{t+1} σ(z), ties to the lowest index, with
//
//	β_t = 2 log(n t² π² / (6 δ'))     (Theorem 1, finite decision set)
//
// or a constant β. The iteration t counts the posterior's pending fantasies with its
// real observations, so that the rule is GP-BUCB's on a posterior with fantasies
// (Desautels, Krause and Burdick 2014).
type UCB struct {
	// Delta is δ' ∈ (0, 1) of the schedule. Ignored when ConstantBeta > 0.
	Delta float64
	// ConstantBeta > 0 replaces the schedule by a constant β.
	ConstantBeta float64
	// SkipQueried makes Next never choose a candidate observed or fantasised.
	SkipQueried bool
}

func (u UCB) validate() error {
	if !(u.ConstantBeta >= 0) || math.IsInf(u.ConstantBeta, 0) {
		return fmt.Errorf("gpucb: constant beta must be non-negative and finite (0 = use the schedule), got %g", u.ConstantBeta)
	}
	if u.ConstantBeta == 0 && !(u.Delta > 0 && u.Delta < 1) {
		return fmt.Errorf("gpucb: delta' of the beta schedule must be in (0, 1), got %g", u.Delta)
	}
	return nil
}

// Beta returns the β that Next uses on p: ConstantBeta if set, otherwise β_{t+1} of the
// schedule with t = p.T() + p.Pending().
func (u UCB) Beta(p *Posterior) float64 {
	if u.ConstantBeta > 0 {
		return u.ConstantBeta
	}
	return Beta(p.N(), p.T()+p.Pending()+1, u.Delta)
}

// Next returns the candidate maximising µ(z) + √β σ(z) on p, β = u.Beta(p). It returns
// an error for an invalid rule, and, with SkipQueried, when every candidate has been
// queried.
func (u UCB) Next(p *Posterior) (int, error) {
	if err := u.validate(); err != nil {
		return -1, err
	}
	return p.ArgmaxUpper(math.Sqrt(u.Beta(p)), u.SkipQueried)
}

// GP is GP-UCB in one value: a Posterior (whose methods it has) driven by the UCB rule
// of its Config. Create one with New; it is not safe for concurrent use.
type GP struct {
	*Posterior
	rule UCB
}

// New returns a GP-UCB posterior with no observations over the n candidates cands
// (row-major n×dim). cands is not copied: the caller must not modify it while the GP
// is in use.
func New(cands []float64, n, dim int, cfg Config) (*GP, error) {
	rule := cfg.UCB()
	if err := rule.validate(); err != nil {
		return nil, err
	}
	p, err := NewPosterior(cands, n, dim, cfg.Posterior())
	if err != nil {
		return nil, err
	}
	return &GP{Posterior: p, rule: rule}, nil
}

// Beta returns the β that the next call of Next uses: ConstantBeta if set, otherwise
// β_{t+1} of the schedule with t = T() (plus pending fantasies).
func (g *GP) Beta() float64 { return g.rule.Beta(g.Posterior) }

// Next returns the candidate maximising µ_t(z) + sqrt(β_{t+1}) σ_t(z), with t = T()
// and β from Beta; ties go to the lowest index. With SkipQueried, observed candidates
// are never returned and it is an error if all are.
func (g *GP) Next() (int, error) { return g.rule.Next(g.Posterior) }
