package curator

import (
	"crypto/rand"
	"fmt"
	"math"
	mrand "math/rand/v2"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/noise"
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
	// RangeEstimate is the private scaling estimate [Lower, Upper] came from (record
	// relation, once for the dataset, by the curator's own account); its Target is false
	// when the range is public. The answers' guarantee states its part of the estimate.
	RangeEstimate ScalingPlan
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

// RangeDeclared reports whether the target's range [Lower, Upper] is given.
func (o OutputPrivacy) RangeDeclared() bool { return o.Lower != 0 || o.Upper != 0 }

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
func (r *outputReleaser) exact() bool { return r.mech.Noise() == noise.None }

// chargeKey is the ledger key of an identity's one charge for its answers under this
// setting: a new setting is a new key, and so a new charge.
func (r *outputReleaser) chargeKey() string {
	o := r.cfg
	return fmt.Sprintf("query-answers/%s/eps=%g/delta=%g/range=%g,%g", r.mech.Name(), o.Epsilon, o.Delta, o.Lower, o.Upper)
}

// passChargeKey is chargeKey for answering pass p (QueryOptions.Pass): pass 0's is
// chargeKey itself, as before passes existed.
func (r *outputReleaser) passChargeKey(p int) string {
	if p == 0 {
		return r.chargeKey()
	}
	return fmt.Sprintf("%s/pass=%d", r.chargeKey(), p)
}

// noiseSD is the standard deviation of the noise each answer carries (Laplace: √2 times
// its scale; Gaussian: σ), 0 for exact answers. It depends on the setting only.
func (r *outputReleaser) noiseSD() float64 { return r.mech.NoiseSD() }

// noise is the family of the answers' noise.
func (r *outputReleaser) noise() noise.Family { return r.mech.Noise() }

func (r *outputReleaser) cost() ledger.Cost { return r.mech.Cost() }

// Clip is a range [Lower, Upper] inside the public output range that an identity asks
// one query's answers to be clipped to (QueryOptions.Clip, QueryWith). Each answer is then
// clip(y, [Lower, Upper]) plus noise calibrated to the sensitivity Upper − Lower at the
// setting's (ε, δ) — Laplace of scale (Upper − Lower)/ε — so a narrower range carries
// less noise and costs the same: replacing one record moves its clipped value by at most
// Upper − Lower, so each answer is still (ε, δ)-DP under the record relation, and a row
// is still answered once, so the parallel composition of chargeAnswers still holds. The
// range may only depend on what the identity was released before (its projection and
// earlier answers), which is all an identity has. The zero Clip is the public range.
type Clip struct{ Lower, Upper float64 }

// IsZero reports whether c is the zero Clip (the public range).
func (c Clip) IsZero() bool { return c == Clip{} }

// clipFor returns the range an answer is clipped to when c is asked for: the public
// range for the zero Clip, c itself when it is a finite range with Lower < Upper inside
// the public range, and an error wrapping ErrInvalidArgument otherwise (also for a
// non-zero Clip with exact answers, which are not clipped).
func (r *outputReleaser) clipFor(c Clip) (Clip, error) {
	pub := Clip{r.cfg.Lower, r.cfg.Upper}
	if c.IsZero() {
		return pub, nil
	}
	if r.mech.Noise() == noise.None {
		return Clip{}, fmt.Errorf("%w: a clip range applies only to private answers; this curator releases exact answers (output privacy none)", ErrInvalidArgument)
	}
	if math.IsNaN(c.Lower) || math.IsNaN(c.Upper) || !(c.Lower < c.Upper) {
		return Clip{}, fmt.Errorf("%w: clip range [%g, %g]: want lower < upper", ErrInvalidArgument, c.Lower, c.Upper)
	}
	if c.Lower < pub.Lower || c.Upper > pub.Upper {
		return Clip{}, fmt.Errorf("%w: clip range [%g, %g] is not inside the public output range [%g, %g]", ErrInvalidArgument, c.Lower, c.Upper, pub.Lower, pub.Upper)
	}
	// A width the mechanism cannot be calibrated to (a noise scale outside what pkg/dp
	// draws) is refused here, before anything is charged or evaluated.
	if _, err := r.mechanismFor(c); err != nil {
		return Clip{}, err
	}
	return c, nil
}

// mechanismFor is the answer mechanism of answers clipped to c (from clipFor): the
// setting's own for the public range, otherwise the same mechanism (answer.New with the
// same name) at the same (ε, δ) on the range c, so calibrated to c.Upper − c.Lower.
func (r *outputReleaser) mechanismFor(c Clip) (answer.Mechanism, error) {
	if r.mech.Noise() == noise.None || c == (Clip{r.cfg.Lower, r.cfg.Upper}) {
		return r.mech, nil
	}
	p := r.mech.Params()
	p.Lower, p.Upper = c.Lower, c.Upper
	m, err := answer.New(r.mech.Name(), p)
	if err != nil {
		return nil, fmt.Errorf("%w: clip range [%g, %g]: %v", ErrInvalidArgument, c.Lower, c.Upper, err)
	}
	return m, nil
}

// release returns the value to send for evaluation y, clipped to c (from clipFor).
func (r *outputReleaser) release(y float64, c Clip) (float64, error) {
	m, err := r.mechanismFor(c)
	if err != nil {
		return 0, err
	}
	return m.Release(r.src, y)
}

// noiseSDFor is the standard deviation of the noise of an answer clipped to c.
func (r *outputReleaser) noiseSDFor(c Clip) (float64, error) {
	m, err := r.mechanismFor(c)
	if err != nil {
		return 0, err
	}
	return m.NoiseSD(), nil
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
