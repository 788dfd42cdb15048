package curator

import (
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
)

// OutputPrivacy says how query answers are released (docs/MATHS.md §2.3, docs/PRIVACY.md §5).
//
// "laplace" and "gaussian" clip the evaluation to [Lower, Upper] and add noise
// calibrated to the sensitivity Upper − Lower (one record's output may change anywhere
// within the range when the record is replaced): each answer is (Epsilon, Delta)-DP
// under ledger.RelationRecord (Delta is 0 for Laplace). The answers to one identity
// compose in parallel, so the identity pays (Epsilon, Delta) once (see chargeAnswers).
//
// Mechanism "none" releases the recorded evaluation as it is: the paper's setting, in
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
		o.Mechanism = "none"
	}
	return o
}

// releaser is the noise mechanism of private outputs.
type releaser interface {
	Release(src *dp.Source, x float64) (float64, error)
}

type outputReleaser struct {
	cfg  OutputPrivacy
	mech releaser // nil for "none"
	src  *dp.Source
}

func newOutputReleaser(o OutputPrivacy) (*outputReleaser, error) {
	o = o.normalised()
	r := &outputReleaser{cfg: o}
	if o.Mechanism == "none" {
		if o.Epsilon != 0 || o.Delta != 0 {
			return nil, fmt.Errorf("curator: output privacy none takes no epsilon or delta")
		}
		return r, nil
	}
	if math.IsNaN(o.Lower) || math.IsNaN(o.Upper) || math.IsInf(o.Lower, 0) || math.IsInf(o.Upper, 0) || !(o.Lower < o.Upper) {
		return nil, fmt.Errorf("curator: output privacy needs a finite range lower < upper, got [%g, %g]", o.Lower, o.Upper)
	}
	sens := o.Upper - o.Lower
	if math.IsInf(sens, 0) {
		return nil, fmt.Errorf("curator: output privacy range [%g, %g] is wider than float64 can hold (upper − lower overflows); declare a range that the target can be rescaled to", o.Lower, o.Upper)
	}
	var err error
	switch o.Mechanism {
	case "laplace":
		if o.Delta != 0 {
			return nil, fmt.Errorf("curator: the Laplace output mechanism is pure ε-DP; delta must be 0, got %g", o.Delta)
		}
		r.mech, err = dp.NewLaplace(o.Epsilon, sens)
	case "gaussian":
		if o.Delta <= 0 {
			return nil, fmt.Errorf("curator: the Gaussian output mechanism needs delta in (0, 1), got %g", o.Delta)
		}
		r.mech, err = dp.NewGaussian(o.Epsilon, o.Delta, sens)
	default:
		return nil, fmt.Errorf("curator: unknown output privacy mechanism %q (want none, laplace or gaussian)", o.Mechanism)
	}
	if err != nil {
		return nil, fmt.Errorf("curator: output privacy: %w", err)
	}
	r.src = dp.CryptoSource()
	return r, nil
}

func (r *outputReleaser) name() string { return r.cfg.Mechanism }

// exact reports whether answers are released without privacy.
func (r *outputReleaser) exact() bool { return r.mech == nil }

// chargeKey is the ledger key of an identity's one charge for its answers under this
// setting: a new setting is a new key, and so a new charge.
func (r *outputReleaser) chargeKey() string {
	o := r.cfg
	return fmt.Sprintf("query-answers/%s/eps=%g/delta=%g/range=%g,%g", o.Mechanism, o.Epsilon, o.Delta, o.Lower, o.Upper)
}

// noiseSD is the standard deviation of the noise each answer carries (Laplace: √2 times
// its scale; Gaussian: σ), 0 for exact answers. It depends on the setting only.
func (r *outputReleaser) noiseSD() float64 {
	switch m := r.mech.(type) {
	case *dp.Laplace:
		return math.Sqrt2 * m.Scale()
	case *dp.Gaussian:
		return m.Scale()
	}
	return 0
}

func (r *outputReleaser) cost() ledger.Cost {
	return ledger.Cost{Epsilon: r.cfg.Epsilon, Delta: r.cfg.Delta}
}

// release returns the value to send for evaluation y.
func (r *outputReleaser) release(y float64) (float64, error) {
	if r.mech == nil {
		return y, nil
	}
	return r.mech.Release(r.src, min(max(y, r.cfg.Lower), r.cfg.Upper))
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
