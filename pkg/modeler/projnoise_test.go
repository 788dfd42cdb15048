package modeler

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/study"
)

// noisyCurator is fixedCurator releasing Z with a stated noise sd.
type noisyCurator struct {
	fixedCurator
	sd float64
}

func (c noisyCurator) ReleaseProjection(ctx context.Context, req ProjectionRequest) (*Projection, error) {
	p, err := c.fixedCurator.ReleaseProjection(ctx, req)
	if err != nil {
		return nil, err
	}
	p.NoiseSD = c.sd
	return p, nil
}

// TestProjectionNoiseSettings checks what the GP is given for a release with noise sd
// σ = 0.7 under each ProjectionNoise: σ² and the de-biased default lengthscale
// (model), σ² and the raw default lengthscale (kernel), nothing (ignore); and that a
// release without noise is exact under the default.
func TestProjectionNoiseSettings(t *testing.T) {
	const n, dim = 200, 4
	sd := 0.7 // a variable: σ² is then computed in float64 as the modeler computes it
	rng := rand.New(rand.NewPCG(1, 2))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = 2 * rng.NormFloat64()
	}
	f := func(i int) float64 { return 100 + 10*math.Sin(z[i*dim]) }
	raw := gpucb.DefaultLengthscale(z, n, dim)
	base := fixedCurator{z, n, dim, f, 0, 200}
	for _, c := range []struct {
		mode     ProjectionNoise
		sd       float64
		inVar    float64
		ls       float64
		reported string
	}{
		{ProjectionNoiseModel, sd, sd * sd, gpucb.DebiasLengthscale(raw, dim, sd*sd), "model"},
		{ProjectionNoiseKernel, sd, sd * sd, raw, "kernel"},
		{ProjectionNoiseIgnore, sd, 0, raw, "ignore"},
		{ProjectionNoiseModel, 0, 0, raw, ""},
	} {
		res, err := Run(context.Background(), noisyCurator{base, c.sd}, Config{R: dim, Iterations: 12, InitialIndex: 3, ProjectionNoise: c.mode})
		if err != nil {
			t.Fatalf("%q: %v", c.mode, err)
		}
		if res.InputNoiseVariance != c.inVar || res.Lengthscale != c.ls || res.ProjectionNoiseSD != c.sd || res.ProjectionNoise != c.reported {
			t.Errorf("%q, σ %g: input noise %g, lengthscale %g, σ %g, mode %q; want %g, %g, %g, %q",
				c.mode, c.sd, res.InputNoiseVariance, res.Lengthscale, res.ProjectionNoiseSD, res.ProjectionNoise, c.inVar, c.ls, c.sd, c.reported)
		}
	}
	if _, err := Run(context.Background(), noisyCurator{base, sd}, Config{R: dim, Iterations: 5, ProjectionNoise: "model"}); err == nil {
		t.Error(`ProjectionNoise "model" accepted in Config (its value is "")`)
	}
	if _, err := Run(context.Background(), noisyCurator{base, math.NaN()}, Config{R: dim, Iterations: 5}); err == nil {
		t.Error("a NaN noise sd was accepted")
	}
}

// TestProjectionNoiseResume stops a study after 8 of 20 answers and resumes it: the
// resumed study must query the same rows as an uninterrupted one (the GP is rebuilt
// with the σ of the stored release), for the default and for "ignore", and the setting
// must be stored (a resume with another value is refused).
func TestProjectionNoiseResume(t *testing.T) {
	const n, dim, sd = 150, 3, 0.5
	rng := rand.New(rand.NewPCG(3, 4))
	z := make([]float64, n*dim)
	for k := range z {
		z[k] = rng.NormFloat64()
	}
	f := func(i int) float64 { x := z[i*dim : (i+1)*dim]; return 100 - 20*(x[0]*x[0]+x[1]*x[1]) + 5*x[2] }
	cur := noisyCurator{fixedCurator{z, n, dim, f, 0, 200}, sd}
	for _, mode := range []ProjectionNoise{ProjectionNoiseModel, ProjectionNoiseIgnore} {
		store, err := study.Open(filepath.Join(t.TempDir(), "s"))
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{R: dim, Iterations: 20, InitialIndex: 0, ProjectionNoise: mode}
		whole, err := Run(context.Background(), cur, cfg)
		if err != nil {
			t.Fatal(err)
		}
		part := cfg
		part.Iterations = 8
		if _, err := RunStudy(context.Background(), cur, store, "s", study.Connection{Curator: "x"}, part); err != nil {
			t.Fatal(err)
		}
		st, err := store.Get(context.Background(), "s")
		if err != nil {
			t.Fatal(err)
		}
		if st.Release.NoiseSD != sd || st.Settings.ProjectionNoise != string(mode) {
			t.Errorf("%q: stored σ %g, setting %q; want %g, %q", mode, st.Release.NoiseSD, st.Settings.ProjectionNoise, sd, mode)
		}
		// The curator now states no noise: the resumed study must keep the stored σ.
		res, err := RunStudy(context.Background(), noisyCurator{cur.fixedCurator, 0}, store, "s", study.Connection{Curator: "x"}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for k := range whole.Queried {
			if res.Queried[k] != whole.Queried[k] {
				t.Fatalf("%q: resumed study queried %v, uninterrupted %v", mode, res.Queried, whole.Queried)
			}
		}
		other := cfg
		other.ProjectionNoise = ProjectionNoiseKernel
		other.Iterations = 25
		if _, err := RunStudy(context.Background(), cur, store, "s", study.Connection{Curator: "x"}, other); err == nil {
			t.Errorf("%q: resume with projection noise %q accepted", mode, ProjectionNoiseKernel)
		}
		store.Close()
	}
}
