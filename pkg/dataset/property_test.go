package dataset

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// rawOf builds a Raw table in code: columns c0..c{d-1}, target y.
func rawOf(x []float64, n, d int) *Raw {
	feats := make([]string, d)
	for j := range feats {
		feats[j] = fmt.Sprintf("c%d", j)
	}
	lines := make([]int, n)
	for i := range lines {
		lines[i] = i + 2
	}
	return &Raw{Name: "random", Features: feats, Target: "y", N: n, D: d, X: x, Y: make([]float64, n), file: "random.csv", headerLine: 1, lines: lines}
}

// randomScaling returns a random scaling of the given mode for d columns
// whose raw values are about centre[j] ± spread[j].
func randomScaling(rng *rand.Rand, mode ScalingMode, centre, spread []float64) Scaling {
	d := len(centre)
	s := Scaling{Mode: mode}
	if mode.Private() {
		s.ClipNorm = []float64{0, 0.5, 3, 25}[rng.IntN(4)] // 0: the default 25
		s.Unit = []float64{0, 0.25, 1, 4}[rng.IntN(4)]
	}
	switch mode {
	case ScaleFixed:
		s.Scales, s.Offsets = map[string]float64{}, map[string]float64{}
		for j := range d {
			c := fmt.Sprintf("c%d", j)
			s.Scales[c] = spread[j] * math.Exp(rng.NormFloat64())
			if rng.IntN(2) == 0 {
				s.Offsets[c] = centre[j] + spread[j]*rng.NormFloat64()
			}
		}
	case ScaleSchema, ScalePrivate:
		sch := &Schema{File: "random.schema.csv"}
		for j := range d {
			c := SchemaColumn{Name: fmt.Sprintf("c%d", j)}
			// Bounds narrower than the data half of the time, so clamping happens.
			if mode == ScalePrivate || rng.IntN(3) > 0 {
				lo := centre[j] + spread[j]*rng.NormFloat64()
				c.HasBounds, c.Lower, c.Upper = true, lo, lo+spread[j]*math.Exp(rng.NormFloat64())
			} else {
				c.Scale, c.Offset = spread[j]*math.Exp(rng.NormFloat64()), centre[j]
			}
			sch.Columns = append(sch.Columns, c)
		}
		s.Schema = sch
		if mode == ScalePrivate {
			s.Epsilon = 1 // bounds held fixed, as if estimated with ε = 1
		}
	}
	return s
}

// neighbourCheck scales x and x′ (x with row i changed) and reports how far
// row i moved and whether any other row moved at all.
func neighbourCheck(t *testing.T, s Scaling, x, x2 []float64, n, d, i int) (moved float64, othersMoved bool, a, b *Dataset) {
	t.Helper()
	a, err := rawOf(x, n, d).Scale(s)
	if err != nil {
		t.Fatalf("Scale(%v): %v", s, err)
	}
	b, err = rawOf(x2, n, d).Scale(s)
	if err != nil {
		t.Fatalf("Scale(%v) of the neighbour: %v", s, err)
	}
	for k := range n {
		if k == i {
			continue
		}
		if !slices.Equal(a.Row(k), b.Row(k)) {
			othersMoved = true
		}
	}
	diff := make([]float64, d)
	for j := range d {
		diff[j] = a.Row(i)[j] - b.Row(i)[j]
	}
	return rowNorm(diff), othersMoved, a, b
}

// TestNeighbourProperty is the property the projection's calibration rests
// on (pkg/projection, ProjectGaussian): for every scaling that claims
// privacy, changing one raw record by at most one unit in the scaled metric
// changes exactly that scaled row, by at most one unit; and any change of
// one record changes only its row, by at most ClipDiameterUnits. Random data
// sets, scalings, rows and changes; the unit metric is the affine part
// before clamping and clipping (Dataset.Scale, which includes Unit).
func TestNeighbourProperty(t *testing.T) {
	const tol = 1e-9
	rng := rand.New(rand.NewPCG(11, 12))
	modes := []ScalingMode{ScaleSchema, ScalePrivate, ScaleFixed, ScaleNone}
	for trial := range 2000 {
		mode := modes[trial%len(modes)]
		n, d := 2+rng.IntN(30), 1+rng.IntN(6)
		centre := make([]float64, d)
		spread := make([]float64, d)
		for j := range d {
			centre[j] = 100 * rng.NormFloat64()
			spread[j] = math.Exp(2 * rng.NormFloat64())
		}
		x := make([]float64, n*d)
		for k := range x {
			j := k % d
			x[k] = centre[j] + spread[j]*rng.NormFloat64()*(1+float64(rng.IntN(2))*5)
		}
		s := randomScaling(rng, mode, centre, spread)
		a, err := rawOf(x, n, d).Scale(s)
		if err != nil {
			t.Fatalf("trial %d: Scale(%v): %v", trial, s, err)
		}
		if !a.Private {
			t.Fatalf("trial %d: Scale(%v).Private = false", trial, s)
		}
		// Every row lies in the ball of radius ClipNorm/Unit.
		for k := range n {
			if r := rowNorm(a.Row(k)); r > a.ClipDiameterUnits()/2*(1+1e-15) {
				t.Fatalf("trial %d (%v): row %d has norm %g above ClipNorm/Unit = %g", trial, s, k, r, a.ClipDiameterUnits()/2)
			}
		}
		i := rng.IntN(n)

		// (1) A change of length ≤ 1 in scaled units: δ in scaled units,
		// raw change δ_j·Scale_j.
		delta := make([]float64, d)
		for j := range d {
			delta[j] = rng.NormFloat64()
		}
		length := rng.Float64()
		if rng.IntN(4) == 0 {
			length = 1
		}
		f := length / rowNorm(delta)
		x2 := slices.Clone(x)
		for j := range d {
			x2[i*d+j] += delta[j] * f * a.Scale[j]
		}
		moved, others, _, _ := neighbourCheck(t, s, x, x2, n, d, i)
		if others {
			t.Fatalf("trial %d (%v): changing row %d moved another scaled row", trial, s, i)
		}
		if moved > length+tol {
			t.Fatalf("trial %d (%v): a change of %g units in row %d moved it by %.17g units", trial, s, length, i, moved)
		}

		// (2) Any change of the record, however large: only its row moves,
		// by at most the clip diameter.
		x3 := slices.Clone(x)
		for j := range d {
			x3[i*d+j] = centre[j] + spread[j]*math.Ldexp(rng.NormFloat64(), rng.IntN(30))
		}
		moved, others, _, _ = neighbourCheck(t, s, x, x3, n, d, i)
		if others {
			t.Fatalf("trial %d (%v): replacing row %d moved another scaled row", trial, s, i)
		}
		if moved > a.ClipDiameterUnits()+tol {
			t.Fatalf("trial %d (%v): replacing row %d moved it by %g units, above ClipDiameterUnits %g", trial, s, i, moved, a.ClipDiameterUnits())
		}
	}
}

// TestNeighbourPropertyFailsNonprivate shows the property test has power:
// the same check finds counterexamples under standardise-nonprivate and
// maxnorm-nonprivate, whose scaling is a function of every record, so a
// one-unit change of one record moves the other rows too.
func TestNeighbourPropertyFailsNonprivate(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, mode := range []ScalingMode{ScaleStandardiseNonprivate, ScaleMaxNormNonprivate} {
		found := 0
		for trial := range 50 {
			n, d := 3+rng.IntN(20), 1+rng.IntN(4)
			x := make([]float64, n*d)
			for k := range x {
				x[k] = 50 + 10*rng.NormFloat64()
			}
			s := Scaling{Mode: mode}
			a, err := rawOf(x, n, d).Scale(s)
			if err != nil {
				t.Fatal(err)
			}
			if a.Private || !math.IsInf(a.ClipDiameterUnits(), 1) {
				t.Fatalf("%s: Private %v, ClipDiameterUnits %g, want false and +Inf", mode, a.Private, a.ClipDiameterUnits())
			}
			i := rng.IntN(n)
			x2 := slices.Clone(x)
			// Half a unit in the scaled metric, in the first column.
			x2[i*d] += 0.5 * a.Scale[0]
			moved, others, _, _ := neighbourCheck(t, s, x, x2, n, d, i)
			if others || moved > 0.5+1e-9 {
				found++
			}
			_ = trial
		}
		if found < 45 {
			t.Errorf("%s: the neighbour check failed in %d of 50 random cases, want nearly all (the property test would lack power)", mode, found)
		}
	}
}
