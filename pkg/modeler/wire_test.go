package modeler_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/projection"
)

// writeData writes n rows of d standard normal features and a target y (their first
// coordinate) as CSV, and returns its path.
func writeData(t *testing.T, n, d int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for j := range d {
		fmt.Fprintf(&b, "f%d,", j)
	}
	b.WriteString("y\n")
	for range n {
		var first float64
		for j := range d {
			x := rng.NormFloat64()
			if j == 0 {
				first = x
			}
			fmt.Fprintf(&b, "%.6f,", x)
		}
		fmt.Fprintf(&b, "%.6f\n", first)
	}
	path := filepath.Join(t.TempDir(), "data.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFactsFromTheWire runs studies that leave r to the curator against an in-process
// curator over gRPC, for several shapes (n, d), (ε, δ) and answer mechanisms, and checks
// that what the modeler works with is what the curator stated, not a recomputation:
// r and the rule's figures are those of projection.AutoDimension on the same public
// quantities (computed here independently), the projection's σ the quote's and the
// release's, the answers' noise sd the quote's and the mechanism's, and the
// recommendation's likelihood Laplace exactly when the answers' noise is.
func TestFactsFromTheWire(t *testing.T) {
	for _, c := range []struct {
		n, d           int
		epsilon, delta float64
		out            curator.OutputPrivacy
	}{
		{300, 6, math.Exp(2), 1e-4, curator.OutputPrivacy{Mechanism: answer.MechanismLaplace, Epsilon: 1, Lower: -3, Upper: 3}},
		{1500, 60, 1, 1e-6, curator.OutputPrivacy{Mechanism: answer.MechanismGaussian, Epsilon: 1, Delta: 1e-5, Lower: -3, Upper: 3}},
		{800, 30, math.Exp(1), 1e-5, curator.OutputPrivacy{Mechanism: answer.MechanismLaplace, Epsilon: 2, Lower: -4, Upper: 4}},
	} {
		name := fmt.Sprintf("n=%d,d=%d,ε=%.3g,δ=%g,%s", c.n, c.d, c.epsilon, c.delta, c.out.Mechanism)
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			srv := curatortest.Start(t, curatortest.Options{DataPath: writeData(t, c.n, c.d, uint64(c.n)), Target: "y", DatasetID: "wire", Output: c.out})
			cur := curatorclient.New(curatortest.Client(t, srv.Addr, "wire"))
			info, err := cur.DatasetInfo(ctx)
			if err != nil {
				t.Fatal(err)
			}
			var q *modeler.Quote
			res, err := modeler.Run(ctx, cur, modeler.Config{Iterations: 3, Epsilon: c.epsilon, Delta: c.delta, InitialIndex: 1,
				Quoted: func(qq *modeler.Quote) { q = qq }})
			if err != nil {
				t.Fatal(err)
			}
			want, err := projection.AutoDimension(c.n, c.d, info.ProjectionMechanism, c.epsilon, c.delta, projection.AutoSquaredDistance)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("r = %d of %d, σ = %.4g, noise share %.3g, distortion %.3g", want.R, c.d, want.NoiseSD, want.NoiseShare, want.Distortion)
			if q == nil || !q.RChosen || q.R != want.R || res.R != want.R {
				t.Fatalf("quote %+v, result r = %d; want r = %d chosen by the curator", q, res.R, want.R)
			}
			if got := res.RAuto; got == nil || *got != (modeler.AutoRChoice(want)) {
				t.Errorf("r_auto = %+v, want the rule's %+v", got, want)
			}
			if !(want.NoiseSD > 0) || math.Abs(q.NoiseSD-want.NoiseSD) > 1e-9*want.NoiseSD || math.Abs(res.ProjectionNoiseSD-q.NoiseSD) > 1e-9*q.NoiseSD {
				t.Errorf("projection σ: quote %.12g, release %.12g; want the rule's %.12g", q.NoiseSD, res.ProjectionNoiseSD, want.NoiseSD)
			}
			m, err := answer.New(c.out.Mechanism, answer.Params{Epsilon: c.out.Epsilon, Delta: c.out.Delta, Lower: c.out.Lower, Upper: c.out.Upper})
			if err != nil {
				t.Fatal(err)
			}
			if q.Answers.NoiseSD != m.NoiseSD() || info.OutputPrivacy.NoiseSD != m.NoiseSD() || math.Abs(res.AnswerNoiseSD-m.NoiseSD()) > 1e-12*m.NoiseSD() {
				t.Errorf("answers' noise sd: quote %g, info %g, result %g; want the mechanism's %g", q.Answers.NoiseSD, info.OutputPrivacy.NoiseSD, res.AnswerNoiseSD, m.NoiseSD())
			}
			laplace := m.Noise() == noise.Laplace
			if q.Answers.Noise != m.Noise() || info.OutputPrivacy.Noise != m.Noise() || (res.RecommendLikelihood == modeler.LikelihoodLaplace) != laplace {
				t.Errorf("noise family: quote %v, info %v, recommendation's likelihood %q; want %v", q.Answers.Noise, info.OutputPrivacy.Noise, res.RecommendLikelihood, m.Noise())
			}
		})
	}
}
