// Package answer holds the mechanisms that release a curator's query answers: each
// evaluation y of a record is clipped to a public range [Lower, Upper] and released
// with noise calibrated to the sensitivity Upper − Lower (one record's answer may
// change anywhere within the range when the record is replaced), so each answer is
// (ε, δ)-DP under privacy.RelationRecord (docs/MATHS.md §2.3, docs/PRIVACY.md §5):
//
//   - Laplace: pure ε-DP, Laplace noise of scale (U − L)/ε (Dwork & Roth 2014,
//     Definition 3.3), on package dp's exact sampler;
//   - Gaussian: (ε, δ)-DP, the analytic Gaussian of Balle & Wang (2018);
//   - Exact: the evaluation as it is, no guarantee at all (ε = ∞): the paper's
//     setting, in which outputs are assumed not sensitive, an explicit choice.
//
// A configuration names its mechanism; New parses the name once, with the
// parameters, into a Mechanism, which carries everything that differs between
// mechanisms: its cost, noise, guarantee and release. Adding a mechanism is a type
// implementing Mechanism and a line in the registry (registry.go).
package answer

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/noise"
)

// Params are a private answer mechanism's settings: the (ε, δ) of each answer and the
// public range [Lower, Upper] answers are clipped to. Exact answers take none.
type Params struct {
	Epsilon, Delta float64
	Lower, Upper   float64
}

// Mechanism releases query answers.
type Mechanism interface {
	// Name is the mechanism's configured name.
	Name() string
	// Relation is the neighbour relation the answers' (ε, δ) is stated for.
	Relation() privacy.Relation
	// Params are the settings the mechanism was built with.
	Params() Params
	// Cost is what one identity pays for all its answers (they compose in parallel).
	Cost() privacy.Cost
	// NoiseSD is the standard deviation of each answer's noise (0 for exact answers),
	// and NoiseVariance its variance; both depend on the settings only.
	NoiseSD() float64
	NoiseVariance() float64
	// Noise is the family of the noise (noise.None: exact answers, released without
	// privacy, ε = ∞): what a client needs beyond NoiseSD to model the answers (a
	// Laplace likelihood, say), stated on the wire as an enum so that no client
	// branches on a mechanism's name.
	Noise() noise.Family
	// Guarantee states each answer's guarantee (privacy.Guarantee renders it).
	Guarantee() privacy.Guarantee
	// Release returns the answer to send for the evaluation y, with noise from src.
	Release(src *dp.Source, y float64) (float64, error)
}

// recordNeighbours glosses the record relation.
const recordNeighbours = "one record replaced by any other"

// checkRange validates a private mechanism's range.
func checkRange(p Params) error {
	if math.IsNaN(p.Lower) || math.IsNaN(p.Upper) || math.IsInf(p.Lower, 0) || math.IsInf(p.Upper, 0) || !(p.Lower < p.Upper) {
		return fmt.Errorf("output privacy needs a finite range lower < upper, got [%g, %g]", p.Lower, p.Upper)
	}
	if math.IsInf(p.Upper-p.Lower, 0) {
		return fmt.Errorf("output privacy range [%g, %g] is wider than float64 can hold (upper − lower overflows); declare a range that the target can be rescaled to", p.Lower, p.Upper)
	}
	return nil
}

// Exact releases the evaluation as it is.
type Exact struct{}

func newExact(p Params) (Mechanism, error) {
	if p.Epsilon != 0 || p.Delta != 0 {
		return nil, fmt.Errorf("output privacy %s takes no epsilon or delta", MechanismExact)
	}
	return Exact{}, nil
}

func (Exact) Name() string                                     { return MechanismExact }
func (Exact) Relation() privacy.Relation                       { return privacy.RelationRecord }
func (Exact) Params() Params                                   { return Params{} }
func (Exact) Cost() privacy.Cost                               { return privacy.Cost{} }
func (Exact) NoiseSD() float64                                 { return 0 }
func (Exact) NoiseVariance() float64                           { return 0 }
func (Exact) Noise() noise.Family                              { return noise.None }
func (Exact) Release(_ *dp.Source, y float64) (float64, error) { return y, nil }
func (m Exact) Guarantee() privacy.Guarantee {
	return privacy.Guarantee{Mechanism: m.Name(), Epsilon: math.Inf(1), Relation: m.Relation(), None: true,
		Method: "exact answers", Claim: "output privacy " + m.Name() + ", the operator's explicit choice"}
}

// Laplace clips each answer to the range and adds Laplace noise: pure ε-DP.
type Laplace struct {
	p   Params
	lap *dp.Laplace
}

func newLaplace(p Params) (Mechanism, error) {
	if err := checkRange(p); err != nil {
		return nil, err
	}
	if p.Delta != 0 {
		return nil, fmt.Errorf("the Laplace output mechanism is pure ε-DP; delta must be 0, got %g", p.Delta)
	}
	lap, err := dp.NewLaplace(p.Epsilon, p.Upper-p.Lower)
	if err != nil {
		return nil, fmt.Errorf("output privacy: %w", err)
	}
	return &Laplace{p: p, lap: lap}, nil
}

func (*Laplace) Name() string               { return MechanismLaplace }
func (*Laplace) Noise() noise.Family        { return noise.Laplace }
func (*Laplace) Relation() privacy.Relation { return privacy.RelationRecord }
func (m *Laplace) Params() Params           { return m.p }
func (m *Laplace) Cost() privacy.Cost       { return privacy.Cost{Epsilon: m.p.Epsilon, Delta: m.p.Delta} }

// NoiseSD is √2 times the scale b; NoiseVariance is 2b².
func (m *Laplace) NoiseSD() float64       { return math.Sqrt2 * m.lap.Scale() }
func (m *Laplace) NoiseVariance() float64 { return 2 * m.lap.Scale() * m.lap.Scale() }
func (m *Laplace) Release(src *dp.Source, y float64) (float64, error) {
	return m.lap.Release(src, min(max(y, m.p.Lower), m.p.Upper))
}
func (m *Laplace) Guarantee() privacy.Guarantee {
	return privacy.Guarantee{Mechanism: m.Name(), Epsilon: m.p.Epsilon, Delta: 0, Relation: m.Relation(), Neighbours: recordNeighbours,
		Method: fmt.Sprintf("the recorded value clipped to [%g, %g] plus Laplace noise calibrated to the sensitivity %g", m.p.Lower, m.p.Upper, m.p.Upper-m.p.Lower)}
}

// Gaussian clips each answer to the range and adds the analytic Gaussian's noise.
type Gaussian struct {
	p     Params
	gauss *dp.Gaussian
}

func newGaussian(p Params) (Mechanism, error) {
	if err := checkRange(p); err != nil {
		return nil, err
	}
	if p.Delta <= 0 {
		return nil, fmt.Errorf("the Gaussian output mechanism needs delta in (0, 1), got %g", p.Delta)
	}
	g, err := dp.NewGaussian(p.Epsilon, p.Delta, p.Upper-p.Lower)
	if err != nil {
		return nil, fmt.Errorf("output privacy: %w", err)
	}
	return &Gaussian{p: p, gauss: g}, nil
}

func (*Gaussian) Name() string               { return MechanismGaussian }
func (*Gaussian) Noise() noise.Family        { return noise.Gaussian }
func (*Gaussian) Relation() privacy.Relation { return privacy.RelationRecord }
func (m *Gaussian) Params() Params           { return m.p }
func (m *Gaussian) Cost() privacy.Cost       { return privacy.Cost{Epsilon: m.p.Epsilon, Delta: m.p.Delta} }

// NoiseSD is σ; NoiseVariance σ².
func (m *Gaussian) NoiseSD() float64       { return m.gauss.Scale() }
func (m *Gaussian) NoiseVariance() float64 { return m.gauss.Scale() * m.gauss.Scale() }
func (m *Gaussian) Release(src *dp.Source, y float64) (float64, error) {
	return m.gauss.Release(src, min(max(y, m.p.Lower), m.p.Upper))
}
func (m *Gaussian) Guarantee() privacy.Guarantee {
	return privacy.Guarantee{Mechanism: m.Name(), Epsilon: m.p.Epsilon, Delta: m.p.Delta, Relation: m.Relation(), Neighbours: recordNeighbours,
		Method:    fmt.Sprintf("the recorded value clipped to [%g, %g] plus Gaussian noise calibrated to the sensitivity %g", m.p.Lower, m.p.Upper, m.p.Upper-m.p.Lower),
		Reference: "analytic Gaussian, Balle & Wang 2018"}
}
