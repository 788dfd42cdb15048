package gpucb

import (
	"math"
	"testing"
)

// TestNoisyOutputPrior checks each rule against its formula on the range [0, 400]
// (s_f² = 100² = 10⁴) with σ_n² = 3·10⁴.
func TestNoisyOutputPrior(t *testing.T) {
	const nv = 3e4
	for _, c := range []struct {
		rule NoiseRule
		want NoisyPrior
	}{
		{NoiseRulePublicRange, NoisyPrior{Offset: 200, SignalVariance: 1e4, NoiseVariance: 3e4}},
		{NoiseRuleStandardised, NoisyPrior{Standardise: true, SignalVariance: 0.25, NoiseVariance: 0.75}},
		{NoiseRuleRatio, NoisyPrior{Standardise: true, SignalVariance: 1, NoiseVariance: 3}},
	} {
		got, err := NoisyOutputPrior(c.rule, 0, 400, nv)
		if err != nil {
			t.Fatalf("%s: %v", c.rule, err)
		}
		if got.Standardise != c.want.Standardise || math.Abs(got.Offset-c.want.Offset) > 1e-9 ||
			math.Abs(got.SignalVariance-c.want.SignalVariance) > 1e-12*c.want.SignalVariance ||
			math.Abs(got.NoiseVariance-c.want.NoiseVariance) > 1e-12*c.want.NoiseVariance {
			t.Errorf("NoisyOutputPrior(%s) = %+v, want %+v", c.rule, got, c.want)
		}
		// Exact answers keep a positive noise variance.
		if p, err := NoisyOutputPrior(c.rule, 0, 400, 0); err != nil || !(p.NoiseVariance > 0) {
			t.Errorf("NoisyOutputPrior(%s, σ_n² = 0) = %+v, %v; want a positive NoiseVariance", c.rule, p, err)
		}
		if r, err := ParseNoiseRule(string(c.rule)); err != nil || r != c.rule {
			t.Errorf("ParseNoiseRule(%q) = %q, %v", c.rule, r, err)
		}
	}
	if _, err := NoisyOutputPrior("x", 0, 1, 1); err == nil {
		t.Error("unknown rule: error = nil")
	}
	if _, err := ParseNoiseRule("off"); err == nil {
		t.Error(`ParseNoiseRule("off") error = nil, want an error`)
	}
	if _, err := NoisyOutputPrior(NoiseRulePublicRange, 2, 1, 1); err == nil {
		t.Error("reversed range: error = nil")
	}
	if _, err := NoisyOutputPrior(NoiseRulePublicRange, 0, 1, -1); err == nil {
		t.Error("negative noise variance: error = nil")
	}
}
