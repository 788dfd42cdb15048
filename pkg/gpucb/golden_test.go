package gpucb

import (
	"encoding/json"
	"flag"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// updateGolden rewrites testdata/picks.json from the code under test:
//
//	go test ./pkg/gpucb -run TestGoldenPicks -update-golden
//
// The committed fixture was produced so by the fused GP-UCB (gpucb.GP with Next) at
// commit 495fbda, before the split into a posterior and an acquisition rule; the test
// then holds the split to the same rows.
var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/picks.json from the current code")

// goldenCase is one GP-UCB run: a configuration, a candidate set and a schedule of
// refits, driven for T steps on a smooth objective with seeded observation noise.
type goldenCase struct {
	name     string
	n, dim   int
	t        int
	cfg      Config
	noise    float64 // sd of the observation noise added to smooth
	refitAt  []int   // refit the hyperparameters after this many observations
	seedCand uint64
}

func goldenCases() []goldenCase {
	base := func(std bool) Config {
		return Config{Kernel: SquaredExponential, Lengthscale: 1.5, SignalVariance: 1, NoiseVariance: 1e-3,
			Delta: 0.05, Standardise: std, SkipQueried: true}
	}
	matern := base(true)
	matern.Kernel = Matern52
	constant := base(true)
	constant.ConstantBeta = 4
	repeats := base(true)
	repeats.SkipQueried, repeats.NoiseVariance = false, 0.05
	raw := base(false)
	inNoise := base(true)
	inNoise.InputNoiseVariance = 0.09
	parallel := base(true)
	parallel.Workers = 2
	serial := parallel
	serial.Workers = 1
	return []goldenCase{
		{name: "standardised SE", n: 500, dim: 3, t: 40, cfg: base(true), noise: 0.05, seedCand: 1},
		{name: "raw SE", n: 500, dim: 3, t: 40, cfg: raw, noise: 0.05, seedCand: 2},
		{name: "Matérn 5/2", n: 500, dim: 4, t: 40, cfg: matern, noise: 0.05, seedCand: 3},
		{name: "constant beta", n: 500, dim: 3, t: 30, cfg: constant, noise: 0.05, seedCand: 4},
		{name: "repeats allowed", n: 200, dim: 2, t: 40, cfg: repeats, noise: 0.2, seedCand: 5},
		{name: "input noise", n: 400, dim: 3, t: 30, cfg: inNoise, noise: 0.05, seedCand: 6},
		{name: "refits", n: 400, dim: 3, t: 40, cfg: base(true), noise: 0.05, refitAt: []int{5, 10, 20, 30}, seedCand: 7},
		{name: "input noise refits", n: 300, dim: 3, t: 25, cfg: inNoise, noise: 0.05, refitAt: []int{8, 16}, seedCand: 8},
		{name: "two workers", n: 5000, dim: 5, t: 30, cfg: parallel, noise: 0.05, seedCand: 9},
		{name: "one worker", n: 5000, dim: 5, t: 30, cfg: serial, noise: 0.05, seedCand: 9},
	}
}

// runGolden drives a GP-UCB run through the package's public API and returns the rows
// picked, in order.
func runGolden(t *testing.T, c goldenCase) []int {
	t.Helper()
	rng := rand.New(rand.NewPCG(c.seedCand, 99))
	cands := make([]float64, c.n*c.dim)
	for k := range cands {
		cands[k] = 2 * rng.NormFloat64()
	}
	noise := make([]float64, c.t)
	for k := range noise {
		noise[k] = c.noise * rng.NormFloat64()
	}
	g, err := New(cands, c.n, c.dim, c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	var picks []int
	for k := range c.t {
		i, err := g.Next()
		if err != nil {
			t.Fatalf("%s: step %d: %v", c.name, k, err)
		}
		picks = append(picks, i)
		if err := g.Observe(i, 10+3*smooth(cands[i*c.dim:(i+1)*c.dim])+noise[k]); err != nil {
			t.Fatalf("%s: step %d: %v", c.name, k, err)
		}
		if slices.Contains(c.refitAt, k+1) {
			if _, err := g.Refit(FitOptions{Seed: uint64(k)}); err != nil {
				t.Fatalf("%s: refit after %d: %v", c.name, k+1, err)
			}
		}
	}
	return picks
}

// TestGoldenPicks checks that GP-UCB picks the rows the pre-split code picked for the
// same inputs (testdata/picks.json; see updateGolden for how it was produced).
func TestGoldenPicks(t *testing.T) {
	path := filepath.Join("testdata", "picks.json")
	got := map[string][]int{}
	for _, c := range goldenCases() {
		got[c.name] = runGolden(t, c)
	}
	if *updateGolden {
		if err := os.WriteFile(path, goldenJSON(t, got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string][]int
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for _, c := range goldenCases() {
		if w, ok := want[c.name]; !ok || !slices.Equal(got[c.name], w) {
			t.Errorf("%s: picks %v, want %v (testdata/picks.json)", c.name, got[c.name], w)
		}
	}
	if !slices.Equal(got["two workers"], got["one worker"]) {
		t.Errorf("picks depend on Workers: %v with two, %v with one", got["two workers"], got["one worker"])
	}
}

// goldenJSON renders picks as a JSON object with one case per line, sorted by name.
func goldenJSON(t *testing.T, picks map[string][]int) []byte {
	t.Helper()
	names := slices.Sorted(maps.Keys(picks))
	out := []byte("{\n")
	for k, name := range names {
		kb, err := json.Marshal(name)
		if err != nil {
			t.Fatal(err)
		}
		vb, err := json.Marshal(picks[name])
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(append(append(out, "  "...), kb...), ": "...), vb...)
		if k < len(names)-1 {
			out = append(out, ',')
		}
		out = append(out, '\n')
	}
	return append(out, "}\n"...)
}
