package kusner

import (
	"math"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/ledger"
)

func validConfig(alg Algorithm) Config {
	c := Config{
		Algorithm: alg, Candidates: grid1(10), N: 10, Dim: 1,
		Iterations: 5, Epsilon: 1, Delta: 1e-3, K1: 0.5,
	}
	switch alg {
	case NoisyGP:
		c.NoiseVariance = 0.01
	case NoiseFree:
		c.A, c.Tau = 1, 0.5
	case Lipschitz:
		c.Delta, c.K1 = 0, 0
		c.LambdaMin, c.LambdaMax, c.L, c.GStar, c.M = 0.01, 1, 1, 1, 100
	}
	return c
}

func TestValidate(t *testing.T) {
	nan := math.NaN()
	inf := math.Inf(1)
	tests := []struct {
		name   string
		alg    Algorithm
		modify func(*Config)
		want   string // substring of the error; "" = valid
	}{
		{"alg1 valid", NoisyGP, func(*Config) {}, ""},
		{"alg2 valid", NoiseFree, func(*Config) {}, ""},
		{"alg3 valid", Lipschitz, func(*Config) {}, ""},
		{"alg3 ignores delta", Lipschitz, func(c *Config) { c.Delta = 5 }, ""},
		{"alg3 exact", Lipschitz, func(c *Config) { c.NoiseVariance = 0 }, ""},
		{"alg1 T = 1", NoisyGP, func(c *Config) { c.Iterations = 1 }, ""},
		{"alg1 gamma given", NoisyGP, func(c *Config) { c.GammaT = 3 }, ""},
		{"algorithm unset", NoisyGP, func(c *Config) { c.Algorithm = 0 }, "algorithm not set"},
		{"algorithm unknown", NoisyGP, func(c *Config) { c.Algorithm = 4 }, "unknown algorithm"},
		{"empty grid", NoisyGP, func(c *Config) { c.N, c.Candidates = 0, nil }, "grid is empty"},
		{"dim 0", NoisyGP, func(c *Config) { c.Dim = 0 }, "dimension"},
		{"shape", NoisyGP, func(c *Config) { c.N = 9 }, "want N×Dim"},
		{"NaN candidate", NoisyGP, func(c *Config) { c.Candidates = append([]float64(nil), c.Candidates...); c.Candidates[3] = nan }, "candidate 3"},
		{"T = 0", NoisyGP, func(c *Config) { c.Iterations = 0 }, "at least 1 iterations"},
		{"T < 0", Lipschitz, func(c *Config) { c.Iterations = -2 }, "at least 1 iterations"},
		{"alg2 T = 1", NoiseFree, func(c *Config) { c.Iterations = 1 }, "at least 2 iterations"},
		{"ε = 0", NoisyGP, func(c *Config) { c.Epsilon = 0 }, "epsilon"},
		{"ε < 0", Lipschitz, func(c *Config) { c.Epsilon = -1 }, "epsilon"},
		{"ε = Inf", NoiseFree, func(c *Config) { c.Epsilon = inf }, "epsilon"},
		{"ε NaN", NoisyGP, func(c *Config) { c.Epsilon = nan }, "epsilon"},
		{"δ = 0", NoisyGP, func(c *Config) { c.Delta = 0 }, "delta in (0, 1)"},
		{"δ = 1", NoiseFree, func(c *Config) { c.Delta = 1 }, "delta in (0, 1)"},
		{"δ NaN", NoisyGP, func(c *Config) { c.Delta = nan }, "delta in (0, 1)"},
		{"k1 = 1", NoisyGP, func(c *Config) { c.K1 = 1 }, "k1"},
		{"k1 < 0", NoiseFree, func(c *Config) { c.K1 = -0.1 }, "k1"},
		{"lengthscale < 0", NoisyGP, func(c *Config) { c.Lengthscale = -1 }, "lengthscale"},
		{"lengthscale Inf", Lipschitz, func(c *Config) { c.Lengthscale = inf }, "lengthscale"},
		{"alg1 σ² = 0", NoisyGP, func(c *Config) { c.NoiseVariance = 0 }, "noise variance"},
		{"alg1 σ² tiny", NoisyGP, func(c *Config) { c.NoiseVariance = 1e-12 }, "noise variance"},
		{"alg1 σ² Inf", NoisyGP, func(c *Config) { c.NoiseVariance = inf }, "noise variance"},
		{"alg1 γ < 0", NoisyGP, func(c *Config) { c.GammaT = -1 }, "gamma_T"},
		{"alg2 A = 0", NoiseFree, func(c *Config) { c.A = 0 }, "constant A"},
		{"alg2 τ NaN", NoiseFree, func(c *Config) { c.Tau = nan }, "tau"},
		{"alg3 σ² < 0", Lipschitz, func(c *Config) { c.NoiseVariance = -1 }, "noise variance"},
		{"alg3 λmin = 0", Lipschitz, func(c *Config) { c.LambdaMin = 0 }, "lambda_min"},
		{"alg3 λmax < λmin", Lipschitz, func(c *Config) { c.LambdaMax = 0.001 }, "lambda_max"},
		{"alg3 L = 0", Lipschitz, func(c *Config) { c.L = 0 }, "Lipschitz constant"},
		{"alg3 g* Inf", Lipschitz, func(c *Config) { c.GStar = inf }, "g*"},
		{"alg3 m = 0", Lipschitz, func(c *Config) { c.M = 0 }, "validation set size"},
	}
	for _, tc := range tests {
		c := validConfig(tc.alg)
		tc.modify(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Validate() = %v, want nil", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: Validate() = nil, want error containing %q", tc.name, tc.want)
		case tc.want != "" && (!strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "kusner: ")):
			t.Errorf("%s: Validate() = %q, want \"kusner: …%s…\"", tc.name, err, tc.want)
		}
		if _, cerr := c.Constants(); (cerr == nil) != (err == nil) {
			t.Errorf("%s: Constants() error = %v, Validate() error = %v: want both or neither", tc.name, cerr, err)
		}
	}
}

// A Laplace scale outside what dp accepts is caught by Constants, before Run
// touches data.
func TestConstantsMechanismLimits(t *testing.T) {
	c := validConfig(Lipschitz)
	c.Epsilon = 1e-300
	if _, err := c.Constants(); err == nil || !strings.Contains(err.Error(), "value release") {
		t.Errorf("Constants(ε = 1e-300) error = %v, want a value-release error", err)
	}
}

func TestCost(t *testing.T) {
	tests := []struct {
		alg      Algorithm
		eps, dlt float64
	}{
		{NoisyGP, 2, 2e-3},
		{NoiseFree, 2, 2e-3},
		{Lipschitz, 1, 0},
	}
	for _, tc := range tests {
		c := validConfig(tc.alg)
		c.Delta = 1e-3
		if e, d := c.Cost(); e != tc.eps || d != tc.dlt {
			t.Errorf("%v: Cost() = (%g, %g), want (%g, %g)", tc.alg, e, d, tc.eps, tc.dlt)
		}
		if got := c.Steps(); got != 6 {
			t.Errorf("%v: Steps() = %d, want T + 1 = 6", tc.alg, got)
		}
	}
}

func TestGuarantee(t *testing.T) {
	tests := []struct {
		alg  Algorithm
		want []string
	}{
		{NoisyGP, []string{"(2, 0.002)-differentially private", "each (1, 0.001)-DP", "Assumption 1", "k1(V, V') = 0.5", "greedy upper bound"}},
		{NoiseFree, []string{"(2, 0.002)-differentially private", "Assumption 1", "de Freitas", "A = 1, τ = 0.5"}},
		{Lipschitz, []string{"(1, 0)-differentially private", "Assumption 2", "no Gaussian process assumption", "[0.01, 1]", "m = 100"}},
	}
	for _, tc := range tests {
		c := validConfig(tc.alg)
		c.Delta = 1e-3
		g := c.Guarantee()
		// Every text states the neighbour relation, by the ledger's name, and
		// that the training rows are not protected.
		want := append(tc.want, "(neighbours: one validation record replaced)",
			" Neighbour relation validation-record: one record of the validation set is replaced by any other record (the validation size is public).",
			" The training records are NOT protected: the learner is trained on them without any privacy mechanism (Kusner et al.'s setting, in which the training set is not sensitive), so a change of one training record is not covered by this guarantee.")
		if !strings.HasSuffix(g, want[len(want)-1]) {
			t.Errorf("%v: Guarantee() = %q does not end with the statement of what it leaves unprotected", tc.alg, g)
		}
		for _, w := range want {
			if !strings.Contains(g, w) {
				t.Errorf("%v: Guarantee() = %q, want it to contain %q", tc.alg, g, w)
			}
		}
	}
}

// TestRelation: the relation constant is the privacy ledger's name for
// replace-one-validation-record guarantees, so charges made from Kusner jobs
// are totalled under the right relation.
func TestRelation(t *testing.T) {
	if Relation != ledger.RelationValidationRecord || string(Relation) != "validation-record" {
		t.Errorf("Relation = %q, want the ledger's %q", Relation, ledger.RelationValidationRecord)
	}
	if err := Relation.Validate(); err != nil {
		t.Error(err)
	}
}

func TestAlgorithmString(t *testing.T) {
	for a, want := range map[Algorithm]string{NoisyGP: "noisy-gp", NoiseFree: "noise-free", Lipschitz: "lipschitz"} {
		if got := a.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", int(a), got, want)
		}
	}
	if s := Algorithm(7).String(); s != "Algorithm(7)" {
		t.Errorf("Algorithm(7).String() = %q, want \"Algorithm(7)\"", s)
	}
}
