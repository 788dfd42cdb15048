package projection

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestOmega pins ω = 16·sqrt(r·log(2/δ))·log(16r/δ)/ε. Reference values worked
// out by hand from log 2 = 0.693147180560, log 10 = 2.302585092994:
//
//	r=10, ε=e^1.1, δ=1e-5: log(2/δ) = log 2 + 5 log 10 = 12.206072646;
//	  sqrt(10·12.206072646) = sqrt(122.06072646) = 11.048109633;
//	  log(16r/δ) = log 160 + 5 log 10 = 5.075173815 + 11.512925465 = 16.588099280;
//	  ω = 16·11.048109633·16.588099280 / e^1.1 = 2932.2479 / 3.0041660 = 976.06930.
//	r=5, ε=e², δ=1e-4: log(2/δ) = log 2 + 4 log 10 = 9.903487553;
//	  sqrt(5·9.903487553) = sqrt(49.517437763) = 7.036862778;
//	  log(80/δ) = log 80 + 4 log 10 = 4.382026635 + 9.210340372 = 13.592367007;
//	  ω = 16·7.036862778·13.592367007 / 7.389056099 = 1530.3820 / 7.3890561 = 207.11197.
//	r=20, ε=1, δ=1e-6: log(2/δ) = log 2 + 6 log 10 = 14.508657739;
//	  sqrt(20·14.508657739) = sqrt(290.17315477) = 17.034469606;
//	  log(320/δ) = log 320 + 6 log 10 = 5.768320996 + 13.815510558 = 19.583831554;
//	  ω = 16·17.034469606·19.583831554 = 5337.6029.
func TestOmega(t *testing.T) {
	tests := []struct {
		r            int
		epsilon, del float64
		want         float64
	}{
		{10, math.Exp(1.1), 1e-5, 976.06930},
		{5, math.Exp(2), 1e-4, 207.11197},
		{20, 1, 1e-6, 5337.6029},
	}
	for _, tt := range tests {
		got := Omega(tt.r, tt.epsilon, tt.del)
		if math.Abs(got-tt.want) > 1e-7*tt.want {
			t.Errorf("Omega(%d, %g, %g) = %.10g, want %.10g (rel. tol 1e-7)", tt.r, tt.epsilon, tt.del, got, tt.want)
		}
	}
}

func TestParamsValidate(t *testing.T) {
	tests := []struct {
		p       Params
		wantErr string // substring; "" = valid
	}{
		{Params{R: 10, Epsilon: math.Exp(1.1), Delta: 1e-5}, ""},
		{Params{R: 1, Epsilon: 1e-3, Delta: 0.5}, ""},
		{Params{R: 0, Epsilon: 1, Delta: 1e-5}, "dimension r"},
		{Params{R: -3, Epsilon: 1, Delta: 1e-5}, "dimension r"},
		{Params{R: 10, Epsilon: 0, Delta: 1e-5}, "epsilon"},
		{Params{R: 10, Epsilon: -1, Delta: 1e-5}, "epsilon"},
		{Params{R: 10, Epsilon: math.NaN(), Delta: 1e-5}, "epsilon"},
		{Params{R: 10, Epsilon: math.Inf(1), Delta: 1e-5}, "epsilon"},
		{Params{R: 10, Epsilon: 1, Delta: 0}, "delta"},
		{Params{R: 10, Epsilon: 1, Delta: 1}, "delta"},
		{Params{R: 10, Epsilon: 1, Delta: -1e-5}, "delta"},
		{Params{R: 10, Epsilon: 1, Delta: math.NaN()}, "delta"},
		{Params{R: 10, Epsilon: 1e-320, Delta: 1e-5}, "exceeds"},
		{Params{R: 3, Epsilon: 1.4916681462400413e-154, Delta: 1.398043286095289e-76}, "pure noise"},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%+v.Validate() = %v, want nil", tt.p, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "projection: ")):
			t.Errorf("%+v.Validate() = %v, want error containing %q", tt.p, err, tt.wantErr)
		}
	}
}

// gaussianData returns a row-major n×d matrix with entries scale·N(0,1)+offset_j.
func gaussianData(seed uint64, n, d int, scale float64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 17))
	x := make([]float64, n*d)
	for i := range n {
		for j := range d {
			x[i*d+j] = scale*rng.NormFloat64() + float64(3*j-7)
		}
	}
	return x
}

// centredDense centres the columns of x (a reference implementation).
func centredDense(x []float64, n, d int) *mat.Dense {
	c := mat.NewDense(n, d, append([]float64(nil), x...))
	for j := range d {
		s := 0.0
		for i := range n {
			s += c.At(i, j)
		}
		for i := range n {
			c.Set(i, j, c.At(i, j)-s/float64(n))
		}
	}
	return c
}

func singularValues(t *testing.T, a mat.Matrix) []float64 {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(a, mat.SVDNone) {
		t.Fatal("reference SVD did not converge")
	}
	return svd.Values(nil)
}

func identity(d int) []float64 {
	m := make([]float64, d*d)
	for i := range d {
		m[i*d+i] = 1
	}
	return m
}

func maxAbs(a mat.Matrix) float64 {
	r, c := a.Dims()
	m := 0.0
	for i := range r {
		for j := range c {
			m = math.Max(m, math.Abs(a.At(i, j)))
		}
	}
	return m
}

// withDuplicateColumn copies column 0 into column d-1.
func withDuplicateColumn(x []float64, n, d int) []float64 {
	for i := range n {
		x[i*d+d-1] = x[i*d]
	}
	return x
}

// TestJLDistances checks Lemma 1 / Theorem 2 of Kharkovskii et al. (2020)
// (docs/MATHS.md §2.2): with
// r ≥ 8 log(n²/µ)/ν², all pairwise squared distances satisfy
// (1−ν)‖x−x′‖² ≤ ‖z−z′‖² ≤ (1+ν)·C′·‖x−x′‖² with probability ≥ 1 − µ.
// n = 50, ν = 0.45, µ = 1e-4: 8·log(2500/1e-4)/0.45² = 8·17.034/0.2025 = 672.97,
// so r = 673. Each case uses a fixed seed; over independent random seeds the
// chance that any of the four cases fails would be at most 4µ = 4e-4.
func TestJLDistances(t *testing.T) {
	const (
		n, d = 50, 20
		nu   = 0.45
		mu   = 1e-4
	)
	r := int(math.Ceil(8 * math.Log(n*n/mu) / (nu * nu)))
	if r != 673 {
		t.Fatalf("r from the JL bound = %d, want 673", r)
	}
	p := Params{R: r, Epsilon: 1, Delta: 1e-5}
	omega := Omega(r, 1, 1e-5) // ≈ 3.0e4
	tests := []struct {
		seed       uint64
		scale      float64
		wantLifted bool
	}{
		{1, 1e6, false}, // σ_min ≈ (sqrt(49) − sqrt(20))·1e6 ≫ ω
		{2, 1e6, false},
		{3, 1e6, false},
		{4, 1e3, true}, // σ_min ≈ 2.5e3 < ω: C′ = 1 + ω²/σ_min²
	}
	for _, tt := range tests {
		x := gaussianData(tt.seed, n, d, tt.scale)
		z, rep, err := Project(context.Background(), x, n, d, p, SeededSource(tt.seed))
		if err != nil {
			t.Fatalf("seed %d: Project: %v", tt.seed, err)
		}
		if rep.Lifted != tt.wantLifted {
			t.Fatalf("seed %d: Lifted = %v, want %v (σ_min %g, ω %g)", tt.seed, rep.Lifted, tt.wantLifted, rep.SigmaMin, omega)
		}
		cPrime := 1.0
		if rep.Lifted {
			cPrime = 1 + omega*omega/(rep.SigmaMin*rep.SigmaMin)
		}
		lo, hi := math.Inf(1), 0.0 // extreme ratios, for the failure message
		for i := range n {
			for k := i + 1; k < n; k++ {
				dx, dz := 0.0, 0.0
				for j := range d {
					v := x[i*d+j] - x[k*d+j]
					dx += v * v
				}
				for j := range r {
					v := z[i*r+j] - z[k*r+j]
					dz += v * v
				}
				lo, hi = math.Min(lo, dz/dx), math.Max(hi, dz/dx)
			}
		}
		if lo < 1-nu || hi > (1+nu)*cPrime {
			t.Errorf("seed %d: ‖z−z′‖²/‖x−x′‖² in [%g, %g], want within [%g, %g]", tt.seed, lo, hi, 1-nu, (1+nu)*cPrime)
		}
	}
}

// TestLiftedSingularValues checks step 6 through project with M = I_d and
// r = d, which returns d^(−1/2)·X̃: the singular values of X̃ must be
// sqrt(σ_j² + ω²) (not σ_j + ω), X̃ must keep V (X̃ᵀX̃ = XᵀX + ω²I for n ≥ d,
// X̃X̃ᵀ = XXᵀ + ω²I for n < d) and U (X̃Xᵀ symmetric).
func TestLiftedSingularValues(t *testing.T) {
	tests := []struct {
		name      string
		x         []float64
		n, d      int
		omega     float64
		choice    routeChoice
		wantRoute string
		wantRank  int
	}{
		{"tall gram", gaussianData(1, 300, 6, 1), 300, 6, 40, routeAuto, RouteGram, 6},
		{"tall forced svd", gaussianData(1, 300, 6, 1), 300, 6, 40, routeSVD, RouteSVD, 6},
		{"tall ω comparable to σ", gaussianData(2, 300, 6, 10), 300, 6, 150, routeAuto, RouteGram, 6},
		{"duplicate column", withDuplicateColumn(gaussianData(3, 100, 5, 1), 100, 5), 100, 5, 7, routeAuto, RouteSVD, 4},
		{"n equals d", gaussianData(4, 6, 6, 1), 6, 6, 2.5, routeAuto, RouteSVD, 5},
		{"n below d", gaussianData(5, 4, 9, 1), 4, 9, 3, routeAuto, RouteSVD, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, d := tt.n, tt.d
			z, rep, err := project(context.Background(), tt.x, n, d, identity(d), d, tt.omega, tt.choice)
			if err != nil {
				t.Fatalf("project: %v", err)
			}
			if !rep.Lifted || rep.Route != tt.wantRoute || rep.Rank != tt.wantRank {
				t.Fatalf("report = %+v, want Lifted true, Route %q, Rank %d", rep, tt.wantRoute, tt.wantRank)
			}
			xt := mat.NewDense(n, d, z)
			xt.Scale(math.Sqrt(float64(d)), xt)
			xc := centredDense(tt.x, n, d)

			sigma := singularValues(t, xc)
			got := singularValues(t, xt)
			for j, s := range sigma {
				want := math.Sqrt(s*s + tt.omega*tt.omega)
				if math.Abs(got[j]-want) > 1e-9*want {
					t.Errorf("σ_%d(X̃) = %.15g, want sqrt(%.6g² + %g²) = %.15g", j+1, got[j], s, tt.omega, want)
				}
			}

			var lhs, rhs mat.Dense
			if n >= d {
				lhs.Mul(xt.T(), xt)
				rhs.Mul(xc.T(), xc)
			} else {
				lhs.Mul(xt, xt.T())
				rhs.Mul(xc, xc.T())
			}
			k, _ := rhs.Dims()
			for i := range k {
				rhs.Set(i, i, rhs.At(i, i)+tt.omega*tt.omega)
			}
			var diff mat.Dense
			diff.Sub(&lhs, &rhs)
			if e := maxAbs(&diff) / maxAbs(&rhs); e > 1e-9 {
				t.Errorf("Gram identity of X̃: max rel. deviation %g, want ≤ 1e-9", e)
			}

			var cross, asym mat.Dense
			cross.Mul(xt, xc.T())
			asym.Sub(&cross, cross.T())
			if e := maxAbs(&asym) / maxAbs(&cross); e > 1e-9 {
				t.Errorf("X̃Xᵀ asymmetry %g, want ≤ 1e-9 (left singular vectors changed)", e)
			}
		})
	}
}

// TestProjectZGram checks Z from the public API against the maths: with M
// redrawn from the same seed, r·ZᵀZ = Mᵀ X̃ᵀX̃ M = Mᵀ (XᵀX + ω² I) M in step 6
// and Mᵀ XᵀX M in step 5.
func TestProjectZGram(t *testing.T) {
	tests := []struct {
		name       string
		x          []float64
		n, d       int
		p          Params
		wantLifted bool
		wantRoute  string
	}{
		{"lifted gram", gaussianData(6, 500, 4, 1), 500, 4, Params{R: 7, Epsilon: 1, Delta: 1e-5}, true, RouteGram},
		{"lifted duplicate column", withDuplicateColumn(gaussianData(7, 500, 4, 1), 500, 4), 500, 4, Params{R: 7, Epsilon: 1, Delta: 1e-5}, true, RouteSVD},
		{"not lifted", gaussianData(8, 500, 4, 1e4), 500, 4, Params{R: 3, Epsilon: 1, Delta: 1e-5}, false, RouteGram},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const seed = 99
			z, rep, err := Project(context.Background(), tt.x, tt.n, tt.d, tt.p, SeededSource(seed))
			if err != nil {
				t.Fatalf("Project: %v", err)
			}
			if rep.Lifted != tt.wantLifted || rep.Route != tt.wantRoute {
				t.Fatalf("report = %+v, want Lifted %v, Route %q", rep, tt.wantLifted, tt.wantRoute)
			}
			r := tt.p.R
			m := make([]float64, tt.d*r)
			SeededSource(seed).normals(m)
			mm := mat.NewDense(tt.d, r, m)
			xc := centredDense(tt.x, tt.n, tt.d)
			var g mat.Dense
			g.Mul(xc.T(), xc)
			if tt.wantLifted {
				w := Omega(r, tt.p.Epsilon, tt.p.Delta)
				for i := range tt.d {
					g.Set(i, i, g.At(i, i)+w*w)
				}
			}
			var want, tmp, got mat.Dense
			tmp.Mul(&g, mm)
			want.Mul(mm.T(), &tmp)
			zz := mat.NewDense(tt.n, r, z)
			got.Mul(zz.T(), zz)
			got.Scale(float64(r), &got)
			var diff mat.Dense
			diff.Sub(&got, &want)
			if e := maxAbs(&diff) / maxAbs(&want); e > 1e-9 {
				t.Errorf("r·ZᵀZ vs MᵀX̃ᵀX̃M: max rel. deviation %g, want ≤ 1e-9", e)
			}
		})
	}
}

// TestRoutesAgree checks that the Gram and SVD routes give the same Z for the
// same M on well-conditioned data (κ ≈ 1.2), in both branches.
func TestRoutesAgree(t *testing.T) {
	const n, d, r = 3001, 11, 5
	x := gaussianData(9, n, d, 2)
	m := make([]float64, d*r)
	SeededSource(5).normals(m)
	for _, omega := range []float64{10, 300} { // σ ≈ 2·sqrt(3000) ≈ 110
		zg, rg, err := project(context.Background(), x, n, d, m, r, omega, routeAuto)
		if err != nil {
			t.Fatal(err)
		}
		zs, rs, err := project(context.Background(), x, n, d, m, r, omega, routeSVD)
		if err != nil {
			t.Fatal(err)
		}
		if rg.Route != RouteGram || rs.Route != RouteSVD || rg.Lifted != rs.Lifted || rg.Lifted != (omega > 100) {
			t.Fatalf("ω=%g: reports %+v and %+v, want routes gram/svd with the same branch", omega, rg, rs)
		}
		if e := math.Abs(rg.SigmaMin-rs.SigmaMin) / rs.SigmaMin; e > 1e-10 {
			t.Errorf("ω=%g: SigmaMin gram %g, svd %g (rel. %g), want ≤ 1e-10", omega, rg.SigmaMin, rs.SigmaMin, e)
		}
		scale, worst := 0.0, 0.0
		for i := range zs {
			scale = math.Max(scale, math.Abs(zs[i]))
			worst = math.Max(worst, math.Abs(zg[i]-zs[i]))
		}
		if worst > 1e-8*scale {
			t.Errorf("ω=%g: max |Z_gram − Z_svd| = %g, want ≤ 1e-8·%g", omega, worst, scale)
		}
	}
}

// TestRouteSelection checks that ill-conditioned data leave the Gram route.
func TestRouteSelection(t *testing.T) {
	const n, d = 2000, 5
	x := gaussianData(10, n, d, 1)
	for i := range n { // column j scaled by 10^(−2j): κ ≈ 1e8
		for j := range d {
			x[i*d+j] *= math.Pow(10, -2*float64(j))
		}
	}
	// σ_min ≈ sqrt(2000)·1e-8 ≈ 4.5e-7, σ_max ≈ 45, τ = (5 + sqrt(2000))·2^−52
	// ≈ 1.1e-14. With ω = 1e-6 the Gram branch decision is ambiguous
	// (|σ_min² − ω²| ≈ 8e-13 < τσ_max² ≈ 2e-11), and with ω = 1e3 the lift is
	// too inaccurate (½τκ³ ≈ 5e9 ≫ 1e-6): both need the SVD.
	tests := []struct {
		omega     float64
		wantRoute string
	}{
		{1e-6, RouteSVD},
		{1e3, RouteSVD},
	}
	for _, tt := range tests {
		_, rep, err := project(context.Background(), x, n, d, identity(d), d, tt.omega, routeAuto)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Route != tt.wantRoute {
			t.Errorf("ω=%g: Route = %q, want %q (report %+v)", tt.omega, rep.Route, tt.wantRoute, rep)
		}
	}
	// Mildly conditioned (κ ≈ 100, 0.5·τ·κ³ ≈ 6e-9): the Gram route stays.
	y := gaussianData(11, n, d, 1)
	for i := range n {
		y[i*d+d-1] *= 0.01
	}
	_, rep, err := project(context.Background(), y, n, d, identity(d), d, 100, routeAuto)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Route != RouteGram || !rep.Lifted {
		t.Errorf("κ≈100: report %+v, want Route gram, Lifted", rep)
	}
}

func TestProjectReport(t *testing.T) {
	tests := []struct {
		name     string
		x        []float64
		n, d     int
		p        Params
		wantRank int
		zeroMin  bool
	}{
		{"tall", gaussianData(12, 400, 5, 3), 400, 5, Params{R: 10, Epsilon: math.Exp(1.1), Delta: 1e-5}, 5, false},
		{"duplicate column", withDuplicateColumn(gaussianData(13, 400, 5, 3), 400, 5), 400, 5, Params{R: 10, Epsilon: 1, Delta: 1e-5}, 4, true},
		{"n below d", gaussianData(14, 3, 8, 3), 3, 8, Params{R: 4, Epsilon: 1, Delta: 1e-5}, 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			z, rep, err := Project(context.Background(), tt.x, tt.n, tt.d, tt.p, SeededSource(1))
			if err != nil {
				t.Fatalf("Project: %v", err)
			}
			if len(z) != tt.n*tt.p.R {
				t.Fatalf("len(z) = %d, want %d", len(z), tt.n*tt.p.R)
			}
			wantOmega := Omega(tt.p.R, tt.p.Epsilon, tt.p.Delta)
			if rep.N != tt.n || rep.D != tt.d || rep.R != tt.p.R || rep.Omega != wantOmega || rep.Rank != tt.wantRank {
				t.Errorf("report = %+v, want N %d, D %d, R %d, Omega %g, Rank %d", rep, tt.n, tt.d, tt.p.R, wantOmega, tt.wantRank)
			}
			wantMin := 0.0
			if !tt.zeroMin {
				s := singularValues(t, centredDense(tt.x, tt.n, tt.d))
				wantMin = s[len(s)-1]
			}
			if math.Abs(rep.SigmaMin-wantMin) > 1e-9*math.Max(wantMin, 1) {
				t.Errorf("SigmaMin = %.12g, want %.12g", rep.SigmaMin, wantMin)
			}
			if rep.Lifted != (wantMin < wantOmega) {
				t.Errorf("Lifted = %v, want %v (σ_min %g, ω %g)", rep.Lifted, wantMin < wantOmega, wantMin, wantOmega)
			}
		})
	}
}

func TestSources(t *testing.T) {
	const n, d = 200, 4
	x := gaussianData(15, n, d, 1)
	p := Params{R: 6, Epsilon: 2, Delta: 1e-5}
	run := func(src Source) []float64 {
		t.Helper()
		z, _, err := Project(context.Background(), x, n, d, p, src)
		if err != nil {
			t.Fatalf("Project: %v", err)
		}
		return z
	}
	equal := func(a, b []float64) bool {
		for i := range a {
			if a[i] != b[i] {
				return false
			}
		}
		return true
	}
	if a, b := run(SeededSource(42)), run(SeededSource(42)); !equal(a, b) {
		t.Error("SeededSource(42) twice gave different Z, want identical")
	}
	if a, b := run(SeededSource(42)), run(SeededSource(43)); equal(a, b) {
		t.Error("SeededSource(42) and SeededSource(43) gave identical Z")
	}
	seeded := SeededSource(42)
	if a, b := run(seeded), run(seeded); equal(a, b) {
		t.Error("one Source used twice gave identical Z, want fresh M per call")
	}
	if a, b := run(SecureSource()), run(SecureSource()); equal(a, b) {
		t.Error("two SecureSource() calls gave identical Z")
	}
	for _, tt := range []struct {
		src    Source
		name   string
		seeded bool
	}{{SecureSource(), "secure", false}, {SeededSource(1), "seeded", true}, {Source{}, "invalid", false}} {
		if got := tt.src.String(); got != tt.name {
			t.Errorf("String() = %q, want %q", got, tt.name)
		}
		if got := tt.src.Seeded(); got != tt.seeded {
			t.Errorf("%s: Seeded() = %v, want %v", tt.name, got, tt.seeded)
		}
	}
}

// TestSourceNormal checks the first two moments of the Gaussian draws: with
// N = 200000, the sample mean has sd 1/sqrt(N) ≈ 0.0022 and the sample
// variance sd sqrt(2/N) ≈ 0.0032; bounds at 5 sd give a false-failure rate
// below 1e-6 each.
func TestSourceNormal(t *testing.T) {
	const N = 200000
	v := make([]float64, N)
	SecureSource().normals(v)
	mean, sq := 0.0, 0.0
	for _, x := range v {
		mean += x
		sq += x * x
	}
	mean /= N
	variance := sq/N - mean*mean
	if math.Abs(mean) > 5/math.Sqrt(N) {
		t.Errorf("mean of %d draws = %g, want |mean| ≤ %g", N, mean, 5/math.Sqrt(N))
	}
	if math.Abs(variance-1) > 5*math.Sqrt(2.0/N) {
		t.Errorf("variance of %d draws = %g, want 1 ± %g", N, variance, 5*math.Sqrt(2.0/N))
	}
}

// countdownCtx reports cancellation after its Err method has been called
// limit times, to exercise the checks between blocks deterministically.
type countdownCtx struct {
	context.Context
	limit int64
	n     atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.n.Add(1) > c.limit {
		return context.Canceled
	}
	return nil
}

func TestProjectCancel(t *testing.T) {
	const n, d = 20000, 8 // 79 blocks per pass
	x := gaussianData(16, n, d, 1)
	p := Params{R: 4, Epsilon: 1, Delta: 1e-5}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Project(ctx, x, n, d, p, SeededSource(1)); !errors.Is(err, context.Canceled) {
		t.Errorf("Project(cancelled ctx) error = %v, want context.Canceled", err)
	}
	for _, limit := range []int64{1, 40, 100, 200} { // in the mean, Gram and product passes
		ctx := &countdownCtx{Context: context.Background(), limit: limit}
		z, _, err := Project(ctx, x, n, d, p, SeededSource(1))
		if !errors.Is(err, context.Canceled) || z != nil {
			t.Errorf("cancel after %d checks: Project = (len %d, %v), want (nil, context.Canceled)", limit, len(z), err)
		}
	}
	for _, limit := range []int64{10, 100, 200} { // SVD route: mean, copy, product
		ctx := &countdownCtx{Context: context.Background(), limit: limit}
		if _, _, err := project(ctx, x, n, d, identity(d), d, 1e4, routeSVD); !errors.Is(err, context.Canceled) {
			t.Errorf("SVD route, cancel after %d checks: error = %v, want context.Canceled", limit, err)
		}
	}
}

func TestProjectErrors(t *testing.T) {
	good := Params{R: 3, Epsilon: 1, Delta: 1e-5}
	x := gaussianData(17, 10, 3, 1)
	withValue := func(i int, v float64) []float64 {
		y := append([]float64(nil), x...)
		y[i] = v
		return y
	}
	tests := []struct {
		name    string
		x       []float64
		n, d    int
		p       Params
		src     Source
		wantErr string
	}{
		{"bad r", x, 10, 3, Params{R: 0, Epsilon: 1, Delta: 1e-5}, SeededSource(1), "dimension r"},
		{"bad epsilon", x, 10, 3, Params{R: 3, Epsilon: math.Inf(1), Delta: 1e-5}, SeededSource(1), "epsilon"},
		{"bad delta", x, 10, 3, Params{R: 3, Epsilon: 1, Delta: 1}, SeededSource(1), "delta"},
		{"zero source", x, 10, 3, good, Source{}, "zero Source"},
		{"one row", x[:3], 1, 3, good, SeededSource(1), "at least 2 rows"},
		{"no columns", nil, 10, 0, good, SeededSource(1), "at least 1 column"},
		{"NaN", withValue(7, math.NaN()), 10, 3, good, SeededSource(1), "row 2, column 1: value is not finite"},
		{"Inf", withValue(29, math.Inf(-1)), 10, 3, good, SeededSource(1), "row 9, column 2: value is not finite"},
	}
	for _, tt := range tests {
		z, _, err := Project(context.Background(), tt.x, tt.n, tt.d, tt.p, tt.src)
		if err == nil || z != nil || !strings.HasPrefix(err.Error(), "projection: ") || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: Project = (len %d, %v), want error containing %q", tt.name, len(z), err, tt.wantErr)
		}
	}
	// A Gram matrix that overflows (entries ~1e200) falls back to the SVD,
	// which rescales internally.
	huge := gaussianData(21, 50, 3, 1e200)
	if _, rep, err := Project(context.Background(), huge, 50, 3, good, SeededSource(1)); err != nil || rep.Route != RouteSVD {
		t.Errorf("Project(entries ~1e200) = (%+v, %v), want Route svd and no error", rep, err)
	}
	// Overflowing sums where every value is finite.
	big := make([]float64, 20*2)
	for i := range big {
		big[i] = math.MaxFloat64 / 4
	}
	if _, _, err := Project(context.Background(), big, 20, 2, good, SeededSource(1)); err == nil || !strings.Contains(err.Error(), "overflow") {
		t.Errorf("Project(huge values) error = %v, want overflow error", err)
	}

	defer func() {
		if recover() == nil {
			t.Error("Project(len(x) != n*d) did not panic")
		}
	}()
	Project(context.Background(), x[:29], 10, 3, good, SeededSource(1))
}

func TestProjectKeepsInput(t *testing.T) {
	for _, choice := range []routeChoice{routeAuto, routeSVD} {
		x := gaussianData(18, 300, 4, 1)
		orig := append([]float64(nil), x...)
		if _, _, err := project(context.Background(), x, 300, 4, identity(4), 4, 50, choice); err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if x[i] != orig[i] {
				t.Fatalf("route %d: x[%d] changed from %g to %g", choice, i, orig[i], x[i])
			}
		}
	}
}

// TestKernels compares the blocked loops with gonum on shapes that exercise
// the 4-way unrolling remainders.
func TestKernels(t *testing.T) {
	for _, s := range []struct{ rows, k, r int }{{1, 1, 1}, {7, 5, 3}, {13, 9, 20}, {256, 50, 20}} {
		a := gaussianData(19, s.rows, s.k, 1)
		b := gaussianData(20, s.k, s.r, 1)
		z := make([]float64, s.rows*s.r)
		gemmRows(z, a, b, s.rows, s.k, s.r)
		var want mat.Dense
		want.Mul(mat.NewDense(s.rows, s.k, a), mat.NewDense(s.k, s.r, b))
		var diff mat.Dense
		diff.Sub(mat.NewDense(s.rows, s.r, z), &want)
		if e := maxAbs(&diff); e > 1e-12*maxAbs(&want) {
			t.Errorf("gemmRows %v: max deviation %g from gonum", s, e)
		}

		g := make([]float64, s.k*s.k)
		syrkUpper(g, a, s.rows, s.k)
		var gw mat.Dense
		am := mat.NewDense(s.rows, s.k, a)
		gw.Mul(am.T(), am)
		for i := range s.k {
			for j := i; j < s.k; j++ {
				if e := math.Abs(g[i*s.k+j] - gw.At(i, j)); e > 1e-12*maxAbs(&gw) {
					t.Errorf("syrkUpper %v: G[%d,%d] = %g, want %g", s, i, j, g[i*s.k+j], gw.At(i, j))
				}
			}
		}
	}
}

func BenchmarkProject(b *testing.B) {
	for _, s := range []struct{ n, d, r int }{{100000, 30, 20}, {1000000, 50, 20}} {
		b.Run(fmt.Sprintf("n=%d,d=%d,r=%d", s.n, s.d, s.r), func(b *testing.B) {
			x := gaussianData(1, s.n, s.d, 1)
			p := Params{R: s.r, Epsilon: 1, Delta: 1e-5}
			src := SeededSource(1)
			b.ResetTimer()
			var rep Report
			for b.Loop() {
				var err error
				if _, rep, err = Project(context.Background(), x, s.n, s.d, p, src); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(s.n*s.d)*8/1e6, "MB-in")
			if rep.Route != RouteGram {
				b.Logf("route %s", rep.Route)
			}
		})
	}
}

// BenchmarkProjectSVDRoute measures the fallback on the same data shape.
func BenchmarkProjectSVDRoute(b *testing.B) {
	const n, d, r = 100000, 30, 20
	x := gaussianData(1, n, d, 1)
	m := make([]float64, d*r)
	SeededSource(1).normals(m)
	for b.Loop() {
		if _, _, err := project(context.Background(), x, n, d, m, r, Omega(r, 1, 1e-5), routeSVD); err != nil {
			b.Fatal(err)
		}
	}
}
