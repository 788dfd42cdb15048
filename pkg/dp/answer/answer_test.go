package answer

import (
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/noise"
)

// TestNoiseIsDP: each mechanism's stated noise is that of package dp's mechanism it
// releases with (Laplace: √2·b, variance 2b²; Gaussian: σ), and exact answers carry none.
func TestNoiseIsDP(t *testing.T) {
	p := Params{Epsilon: 0.7, Delta: 1e-6, Lower: -3, Upper: 5}
	lap, err := dp.NewLaplace(p.Epsilon, p.Upper-p.Lower)
	if err != nil {
		t.Fatal(err)
	}
	gauss, err := dp.NewGaussian(p.Epsilon, p.Delta, p.Upper-p.Lower)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		p        Params
		sd, vari float64
		cost     privacy.Cost
	}{
		{MechanismExact, Params{}, 0, 0, privacy.Cost{}},
		{MechanismLaplace, Params{Epsilon: p.Epsilon, Lower: p.Lower, Upper: p.Upper}, math.Sqrt2 * lap.Scale(), 2 * lap.Scale() * lap.Scale(), privacy.Cost{Epsilon: p.Epsilon}},
		{MechanismGaussian, p, gauss.Scale(), gauss.Scale() * gauss.Scale(), privacy.Cost{Epsilon: p.Epsilon, Delta: p.Delta}},
	} {
		m, err := New(tt.name, tt.p)
		if err != nil {
			t.Fatalf("New(%s): %v", tt.name, err)
		}
		if m.Name() != tt.name || m.NoiseSD() != tt.sd || m.NoiseVariance() != tt.vari || m.Cost() != tt.cost || m.Relation() != privacy.RelationRecord {
			t.Errorf("%s: name %s, sd %g, variance %g, cost %+v, relation %s; want sd %g, variance %g, cost %+v, record",
				tt.name, m.Name(), m.NoiseSD(), m.NoiseVariance(), m.Cost(), m.Relation(), tt.sd, tt.vari, tt.cost)
		}
		if exact := m.Noise() == noise.None; exact != IsExact(tt.name) || m.Guarantee().Holds() == exact {
			t.Errorf("%s: noise %v, IsExact = %v, guarantee holds = %v", tt.name, m.Noise(), IsExact(tt.name), m.Guarantee().Holds())
		}
	}
}

// TestReleaseClips: a private answer is the clipped value plus noise, so with a large ε
// it lies within 8 noise standard deviations of the clipped value (false-failure rate
// below 1e-14 per draw for either noise); an exact answer is the value itself.
func TestReleaseClips(t *testing.T) {
	src := dp.CryptoSource()
	for _, name := range []string{MechanismLaplace, MechanismGaussian} {
		delta := 0.0
		if !PureEpsilon(name) {
			delta = 1e-6
		}
		m, err := New(name, Params{Epsilon: 50, Delta: delta, Lower: 0, Upper: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, y := range []float64{-50, 0.5, 70} {
			got, err := m.Release(src, y)
			want := min(max(y, 0), 1)
			if err != nil || math.Abs(got-want) > 8*m.NoiseSD() {
				t.Errorf("%s.Release(%g) = %g, %v; want %g within 8σ = %g", name, y, got, err, want, 8*m.NoiseSD())
			}
		}
	}
	if got, err := (Exact{}).Release(src, 70); got != 70 || err != nil {
		t.Errorf("Exact.Release(70) = %g, %v", got, err)
	}
}

func TestNewRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		p    Params
		want string
	}{
		{"uniform", Params{}, "want none, laplace or gaussian"},
		{MechanismExact, Params{Epsilon: 1}, "none takes no epsilon"},
		{MechanismLaplace, Params{Epsilon: 1, Delta: 1e-6, Upper: 1}, "delta must be 0"},
		{MechanismGaussian, Params{Epsilon: 1, Upper: 1}, "delta in (0, 1)"},
		{MechanismGaussian, Params{Epsilon: 1, Delta: 1e-6, Lower: 1, Upper: 1}, "lower < upper"},
		{MechanismLaplace, Params{Epsilon: 1, Lower: -math.MaxFloat64, Upper: math.MaxFloat64}, "overflows"},
		{MechanismLaplace, Params{Epsilon: 0, Upper: 1}, "epsilon"},
	} {
		if _, err := New(tt.name, tt.p); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%q, %+v) = %v, want an error containing %q", tt.name, tt.p, err, tt.want)
		}
	}
	if m, err := New("", Params{}); err != nil || m.Noise() != noise.None {
		t.Errorf(`New("") = %v, %v; want exact answers`, m, err)
	}
}
