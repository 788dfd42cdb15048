package simulate

import (
	"context"
	"encoding/csv"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/testrace"
	"github.com/privbo/privbo/pkg/projection"
)

// TestRunSmall runs the harness on a 20×20 synthetic grid, 3 runs, three methods, and
// checks the CSV, the regret's properties, the plot and reproducibility.
func TestRunSmall(t *testing.T) {
	testrace.Statistical(t)
	out := t.TempDir()
	cfg := Config{
		Synthetic:  &SyntheticConfig{Grid: 20},
		Draws:      2,
		Runs:       3,
		Iterations: 12,
		Methods:    []Method{{Kind: POGPUCB, R: 3}, {Kind: GPUCB}, {Kind: Random}},
		Epsilon:    math.Exp(1.1),
		Delta:      1e-5,
		Seed:       7,
		Workers:    2,
		OutDir:     out,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	const perMethod = 2 * 3 // draws × runs
	if got, want := len(res.Rows), 3*perMethod*12; got != want {
		t.Fatalf("Run gave %d rows, want %d", got, want)
	}

	// CSV: header and one line per row, parseable.
	f, err := os.Open(res.CSVPath)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatalf("reading %s: %v", res.CSVPath, err)
	}
	if !reflect.DeepEqual(recs[0], []string{"method", "run", "iteration", "index", "value", "best", "regret"}) {
		t.Errorf("CSV header = %v", recs[0])
	}
	if len(recs) != len(res.Rows)+1 {
		t.Errorf("CSV has %d lines, want %d", len(recs), len(res.Rows)+1)
	}

	// Regret ≥ 0, non-increasing per run, = best − ... consistent; the same first row
	// for every method in a run.
	type key struct {
		m   string
		run int
	}
	prev := map[key]Row{}
	first := map[int]int{}
	for k, r := range res.Rows {
		rec := recs[k+1]
		if rec[0] != r.Method || rec[1] != strconv.Itoa(r.Run) || rec[3] != strconv.Itoa(r.Index) {
			t.Fatalf("CSV line %d = %v, want row %+v", k+2, rec, r)
		}
		if reg, err := strconv.ParseFloat(rec[6], 64); err != nil || reg != r.Regret {
			t.Fatalf("CSV line %d regret %q, want %g", k+2, rec[6], r.Regret)
		}
		if r.Regret < 0 || math.IsNaN(r.Regret) {
			t.Errorf("%s run %d t=%d: regret %g < 0", r.Method, r.Run, r.Iteration, r.Regret)
		}
		if r.Best < r.Value {
			t.Errorf("%s run %d t=%d: best %g < value %g", r.Method, r.Run, r.Iteration, r.Best, r.Value)
		}
		kk := key{r.Method, r.Run}
		if p, ok := prev[kk]; ok {
			if r.Iteration != p.Iteration+1 || r.Regret > p.Regret || r.Best < p.Best {
				t.Errorf("%s run %d: t=%d regret %g after t=%d regret %g", r.Method, r.Run, r.Iteration, r.Regret, p.Iteration, p.Regret)
			}
			if math.Abs((r.Regret+r.Best)-(p.Regret+p.Best)) > 1e-12 {
				t.Errorf("%s run %d: regret + best changed (%g vs %g)", r.Method, r.Run, r.Regret+r.Best, p.Regret+p.Best)
			}
		} else {
			if r.Iteration != 1 {
				t.Errorf("%s run %d starts at t=%d", r.Method, r.Run, r.Iteration)
			}
			if i, ok := first[r.Run]; ok && i != r.Index {
				t.Errorf("run %d: %s starts at row %d, another method at %d", r.Run, r.Method, r.Index, i)
			}
			first[r.Run] = r.Index
		}
		prev[kk] = r
	}
	if len(prev) != 3*perMethod {
		t.Errorf("%d (method, run) pairs, want %d", len(prev), 3*perMethod)
	}
	// Within a run no method repeats a row (GP-UCB skips queried rows; random permutes).
	seen := map[key]map[int]bool{}
	for _, r := range res.Rows {
		kk := key{r.Method, r.Run}
		if seen[kk] == nil {
			seen[kk] = map[int]bool{}
		}
		if seen[kk][r.Index] {
			t.Errorf("%s run %d queried row %d twice", r.Method, r.Run, r.Index)
		}
		seen[kk][r.Index] = true
	}

	// Summary: one per method, 6 runs each, final mean = mean of the last regrets.
	if len(res.Summary) != 3 {
		t.Fatalf("%d summaries, want 3", len(res.Summary))
	}
	for _, s := range res.Summary {
		var sum float64
		for kk, r := range prev {
			if kk.m == s.Method {
				sum += r.Regret
			}
		}
		if m, _ := s.Final(); s.Runs != perMethod || math.Abs(m-sum/perMethod) > 1e-12 {
			t.Errorf("summary %s: runs %d final %g, want %d and %g", s.Method, s.Runs, m, perMethod, sum/perMethod)
		}
	}
	if len(res.Lifts) != 1 || res.Lifts[0].R != 3 {
		t.Errorf("Lifts = %+v, want one entry for r = 3", res.Lifts)
	}

	// PNG decodes and is not trivial.
	pf, err := os.Open(res.PNGPath)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(pf)
	pf.Close()
	if err != nil {
		t.Fatalf("png.Decode(%s): %v", res.PNGPath, err)
	}
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Errorf("plot is %v, want at least 100×100", b)
	}
	if b, err := os.ReadFile(filepath.Join(out, "summary.md")); err != nil || !strings.Contains(string(b), "po-gp-ucb(r=3)") {
		t.Errorf("summary.md: err %v, content %q", err, b)
	}

	// Reproducible, whatever the number of workers.
	cfg.Workers, cfg.OutDir = 1, ""
	res2, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run again: %v", err)
	}
	if !reflect.DeepEqual(res.Rows, res2.Rows) {
		t.Errorf("Run with the same seed and 1 worker gave different rows")
	}
}

// TestRunData runs the three methods over a small CSV written by the test, maximising
// and minimising a log-transformed target.
func TestRunData(t *testing.T) {
	testrace.Statistical(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "toy.csv")
	var b strings.Builder
	b.WriteString("a,b,c,price\n")
	for i := range 60 {
		a, bb, c := float64(i%7), float64(i%5)*1.5, float64(i)/10
		p := math.Exp(1 + 0.3*a - 0.2*bb + 0.1*c)
		b.WriteString(strconv.FormatFloat(a, 'g', -1, 64) + "," + strconv.FormatFloat(bb, 'g', -1, 64) + "," +
			strconv.FormatFloat(c, 'g', -1, 64) + "," + strconv.FormatFloat(p, 'g', -1, 64) + "\n")
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, minimize := range []bool{false, true} {
		res, err := Run(context.Background(), Config{
			Data: &DataConfig{Path: path, Minimize: minimize, LogOutputs: true},
			Runs: 2, Iterations: 10, Epsilon: 2, Delta: 1e-4, Seed: 3, GP: GPSettings{FitEvery: map[bool]int{false: 0, true: 4}[minimize]},
			Methods: []Method{{Kind: POGPUCB, R: 2}, {Kind: GPUCB}, {Kind: Random}},
		})
		if err != nil {
			t.Fatalf("minimize=%v: Run: %v", minimize, err)
		}
		p, err := LoadProblem(DataConfig{Path: path, Minimize: minimize, LogOutputs: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			want := math.Log(math.Exp(1 + 0.3*float64(r.Index%7) - 0.2*float64(r.Index%5)*1.5 + 0.1*float64(r.Index)/10))
			if minimize {
				want = -want
			}
			if math.Abs(r.Value-want) > 1e-9 || r.Value != p.F[r.Index] {
				t.Fatalf("minimize=%v: row %d value %g, want %g", minimize, r.Index, r.Value, want)
			}
		}
	}
	if err := os.WriteFile(path, []byte("a,price\n1,2\n2,0\n3,4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadProblem(DataConfig{Path: path, LogOutputs: true}); err == nil {
		t.Error("LoadProblem(log of a zero target) error = nil, want an error")
	}
}

// TestSyntheticCovariance checks both samplers against the kernel: over 3000 draws on
// a 3×3 grid (n = 9, lengthscale 10, MaxNorm 25), every entry of the empirical
// covariance must be within 0.12 of K. The standard deviation of an entry is at most
// sqrt(2/3000) ≈ 0.026, so 0.12 is 4.6 sd: false-failure rate below 45 × 4e-6 ≈ 2e-4
// per sampler (the seeds are fixed, so in practice the outcome is deterministic).
func TestSyntheticCovariance(t *testing.T) {
	const draws, g = 3000, 3
	for _, sampler := range []string{SamplerKronecker, SamplerCholesky} {
		cfg := SyntheticConfig{Grid: g, Lengthscale: 10, NoNoise: true, Sampler: sampler}
		n := g * g
		cov := make([]float64, n*n)
		var x []float64
		for d := range draws {
			p, _, err := SyntheticProblem(cfg, uint64(d))
			if err != nil {
				t.Fatalf("%s: %v", sampler, err)
			}
			x = p.X
			for i := range n {
				for j := range n {
					cov[i*n+j] += p.F[i] * p.F[j] / draws
				}
			}
		}
		for i := range n {
			for j := range n {
				d0, d1 := x[2*i]-x[2*j], x[2*i+1]-x[2*j+1]
				want := math.Exp(-(d0*d0 + d1*d1) / 200)
				if math.Abs(cov[i*n+j]-want) > 0.12 {
					t.Errorf("%s: covariance[%d,%d] = %.3f, want %.3f", sampler, i, j, cov[i*n+j], want)
				}
			}
		}
	}
}

// TestKroneckerFactor checks S Sᵀ = K₁ on a 100-point axis (the experiment's), to 1e-12,
// and the grid: corners at norm 25, coordinates centred.
func TestKroneckerFactor(t *testing.T) {
	cfg := SyntheticConfig{}
	if err := cfg.defaults(); err != nil {
		t.Fatal(err)
	}
	c := gridCoords(cfg)
	s, err := axisFactor(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	g := len(c)
	for a := range g {
		for b := range g {
			var v float64
			for k := range g {
				v += s[a*g+k] * s[b*g+k]
			}
			d := c[a] - c[b]
			if want := math.Exp(-d * d / (2 * 6.25 * 6.25)); math.Abs(v-want) > 1e-12 {
				t.Fatalf("(S Sᵀ)[%d,%d] = %.15g, want %.15g", a, b, v, want)
			}
		}
	}
	if got := math.Hypot(c[0], c[0]); math.Abs(got-25) > 1e-12 {
		t.Errorf("corner norm = %g, want 25", got)
	}
	if math.Abs(c[0]+c[g-1]) > 1e-12 {
		t.Errorf("grid not centred: %g, %g", c[0], c[g-1])
	}
}

func TestParseMethods(t *testing.T) {
	for _, c := range []struct {
		in   string
		rs   []int
		want []string
		ok   bool
	}{
		{"po-gp-ucb,gp-ucb,random", []int{3, 6}, []string{"po-gp-ucb(r=3)", "po-gp-ucb(r=6)", "gp-ucb", "random"}, true},
		{" Random ", nil, []string{"random"}, true},
		{"po-gp-ucb", nil, nil, false},
		{"bogus", []int{3}, nil, false},
		{"", nil, nil, false},
	} {
		ms, err := ParseMethods(c.in, c.rs)
		if (err == nil) != c.ok {
			t.Errorf("ParseMethods(%q, %v) error = %v, want ok = %v", c.in, c.rs, err, c.ok)
			continue
		}
		var got []string
		for _, m := range ms {
			got = append(got, m.String())
		}
		if c.ok && !reflect.DeepEqual(got, c.want) {
			t.Errorf("ParseMethods(%q, %v) = %v, want %v", c.in, c.rs, got, c.want)
		}
	}
}

// TestSummarise checks mean and standard error against hand computation: regrets
// {1, 2, 4} at t = 1 give mean 7/3 and SE sqrt(((4/3)² + (1/3)² + (5/3)²)/2/3).
func TestSummarise(t *testing.T) {
	rows := []Row{{Method: "m", Run: 0, Iteration: 1, Regret: 1}, {Method: "m", Run: 1, Iteration: 1, Regret: 2}, {Method: "m", Run: 2, Iteration: 1, Regret: 4}}
	s := Summarise(rows, []string{"m"}, 1)
	m, se := s[0].Final()
	wantSE := math.Sqrt((16.0/9 + 1.0/9 + 25.0/9) / 2 / 3)
	if math.Abs(m-7.0/3) > 1e-12 || math.Abs(se-wantSE) > 1e-12 || s[0].Runs != 3 {
		t.Errorf("Summarise = mean %g se %g runs %d, want %g %g 3", m, se, s[0].Runs, 7.0/3, wantSE)
	}
}

func TestConfigErrors(t *testing.T) {
	base := func() Config {
		return Config{Synthetic: &SyntheticConfig{Grid: 5}, Runs: 2, Iterations: 3, Epsilon: 1, Delta: 1e-5,
			Methods: []Method{{Kind: POGPUCB, R: 2}}}
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
	}{
		{"no problem", func(c *Config) { c.Synthetic = nil }},
		{"both problems", func(c *Config) { c.Data = &DataConfig{Path: "x"} }},
		{"bad epsilon", func(c *Config) { c.Epsilon = -1 }},
		{"bad r", func(c *Config) { c.Methods[0].R = 0 }},
		{"negative runs", func(c *Config) { c.Runs = -1 }},
		{"too many iterations", func(c *Config) { c.Iterations = 26 }},
		{"delta cap", func(c *Config) { c.Delta = 0.6 }},
		{"bad grid", func(c *Config) { c.Synthetic.Grid = 1 }},
		{"bad sampler", func(c *Config) { c.Synthetic.Sampler = "x" }},
		{"unknown kind", func(c *Config) { c.Methods[0].Kind = "x" }},
		{"negative fit-every", func(c *Config) { c.GP.FitEvery = -1 }},
	} {
		cfg := base()
		c.mod(&cfg)
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%s) error = nil, want an error", c.name)
		}
	}
}

// TestRunGaussianMechanism runs PO-GP-UCB against a curator with the Gaussian
// projection mechanism: every run completes, no lifting branch is reported (the
// mechanism has none), and the summary names the mechanism.
func TestRunGaussianMechanism(t *testing.T) {
	out := t.TempDir()
	cfg := Config{
		Synthetic: &SyntheticConfig{Grid: 15}, Runs: 2, Iterations: 8,
		Methods: []Method{{Kind: POGPUCB, R: 3}}, Epsilon: math.Exp(1.1), Delta: 1e-5, Seed: 3, OutDir: out,
		ProjectionMechanism: projection.MechanismGaussian,
	}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got, want := len(res.Rows), 2*8; got != want {
		t.Errorf("%d rows, want %d", got, want)
	}
	if len(res.Lifts) != 0 {
		t.Errorf("Lifts = %+v, want none for the Gaussian mechanism", res.Lifts)
	}
	summary, err := os.ReadFile(res.SummaryPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(summary), "gaussian projection (noise: model)") {
		t.Errorf("summary does not name the mechanism and the GP's treatment of its noise:\n%s", summary)
	}
}
