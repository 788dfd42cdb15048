package curator

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
)

// OutputPrivacy says how query answers are released (docs/MATHS.md §2.3, docs/PRIVACY.md §5;
// the mechanisms are package answer's, Mechanism names one).
//
// Laplace and Gaussian clip the evaluation to [Lower, Upper] and add noise
// calibrated to the sensitivity Upper − Lower (one record's output may change anywhere
// within the range when the record is replaced): each answer is (Epsilon, Delta)-DP
// under ledger.RelationRecord (Delta is 0 for Laplace). The answers to one identity
// compose in parallel, so the identity pays (Epsilon, Delta) once (see chargeAnswers).
//
// Exact answers (answer.MechanismExact) release the recorded evaluation as it is: the paper's setting, in
// which outputs are assumed not sensitive. Such answers have no guarantee at all
// (ε = ∞): they cost nothing and protect nothing. It is an explicit operator choice.
type OutputPrivacy struct {
	Mechanism      string
	Epsilon, Delta float64
	Lower, Upper   float64
	// RangeEpsilon is the ε spent estimating [Lower, Upper] from the data (record
	// relation, once for the dataset, by the curator's own account); 0 when the range
	// is public. The answers' guarantee states it.
	RangeEpsilon float64
}

// DefaultOutputEpsilon is the ε of each private answer when the daemon's operator
// gives none. Because the answers to one identity compose in parallel, it is also all
// that one identity's answers cost.
const DefaultOutputEpsilon = 1.0

// Validate checks the setting as New would.
func (o OutputPrivacy) Validate() error {
	_, err := newOutputReleaser(o)
	return err
}

func (o OutputPrivacy) normalised() OutputPrivacy {
	if o.Mechanism == "" {
		o.Mechanism = answer.MechanismExact
	}
	return o
}

// outputReleaser releases the answers with the mechanism the configuration names,
// parsed once (answer.New).
type outputReleaser struct {
	cfg  OutputPrivacy
	mech answer.Mechanism
	src  *dp.Source
}

func newOutputReleaser(o OutputPrivacy) (*outputReleaser, error) {
	o = o.normalised()
	m, err := answer.New(o.Mechanism, answer.Params{Epsilon: o.Epsilon, Delta: o.Delta, Lower: o.Lower, Upper: o.Upper})
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	return &outputReleaser{cfg: o, mech: m, src: dp.CryptoSource()}, nil
}

func (r *outputReleaser) name() string { return r.mech.Name() }

// exact reports whether answers are released without privacy.
func (r *outputReleaser) exact() bool { return r.mech.Exact() }

// chargeKey is the ledger key of an identity's one charge for its answers under this
// setting: a new setting is a new key, and so a new charge.
func (r *outputReleaser) chargeKey() string {
	o := r.cfg
	return fmt.Sprintf("query-answers/%s/eps=%g/delta=%g/range=%g,%g", r.mech.Name(), o.Epsilon, o.Delta, o.Lower, o.Upper)
}

// noiseSD is the standard deviation of the noise each answer carries (Laplace: √2 times
// its scale; Gaussian: σ), 0 for exact answers. It depends on the setting only.
func (r *outputReleaser) noiseSD() float64 { return r.mech.NoiseSD() }

func (r *outputReleaser) cost() ledger.Cost { return r.mech.Cost() }

// release returns the value to send for evaluation y.
func (r *outputReleaser) release(y float64) (float64, error) {
	return r.mech.Release(r.src, y)
}

// newNoiseSource returns standard normal draws for simulated observation noise, from a
// generator seeded from crypto/rand. This noise models a measurement, not privacy.
func newNoiseSource() func() float64 {
	var seed [32]byte
	if _, err := rand.Read(seed[:]); err != nil {
		panic(fmt.Sprintf("curator: crypto/rand: %v", err))
	}
	g := mrand.New(mrand.NewChaCha8(seed))
	return g.NormFloat64
}
