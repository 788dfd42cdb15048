package projection

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/pkg/dp"
)

// Params are the inputs of Algorithm 1 besides the data.
type Params struct {
	R       int     // projection dimension r ≥ 1
	Epsilon float64 // ε > 0, finite
	Delta   float64 // MinDelta ≤ δ < 1
}

// MinDelta is the smallest δ a projection may be asked for, with either mechanism:
// below it the Gaussian calibration loses precision (dp.MinGaussianDelta), and no
// deployment needs it (δ ≪ 1/n asks for δ near 1e-12 at a billion records).
const MinDelta = dp.MinGaussianDelta

// Validate reports whether p is usable, with a message a person can act on.
func (p Params) Validate() error {
	switch {
	case p.R < 1:
		return fmt.Errorf("projection: projection dimension r must be at least 1, got %d", p.R)
	case math.IsNaN(p.Epsilon) || math.IsInf(p.Epsilon, 0) || p.Epsilon <= 0:
		return fmt.Errorf("projection: epsilon must be positive and finite, got %g", p.Epsilon)
	case math.IsNaN(p.Delta) || p.Delta <= 0 || p.Delta >= 1:
		return fmt.Errorf("projection: delta must be in (0, 1), got %g", p.Delta)
	case p.Delta < MinDelta:
		return fmt.Errorf("projection: delta %g is below the smallest supported, %g, where the noise's calibration loses precision; ask for a δ of at least %g", p.Delta, MinDelta, MinDelta)
	}
	// Beyond MaxOmega the lifted singular values sqrt(σ² + ω²) leave float64's range in
	// the computation, and the release would be pure noise anyway.
	if w := Omega(p.R, p.Epsilon, p.Delta); math.IsInf(w, 0) || math.IsNaN(w) || w > MaxOmega {
		return fmt.Errorf("projection: threshold ω = %g exceeds %g for r=%d, epsilon=%g, delta=%g: the release would be pure noise; use a larger epsilon or delta", w, MaxOmega, p.R, p.Epsilon, p.Delta)
	}
	return nil
}

// MaxOmega is the largest threshold ω that Validate accepts.
const MaxOmega = 1e100

// Omega returns the singular-value threshold of Algorithm 1, line 5:
//
//	ω = 16 · sqrt(r · log(2/δ)) · log(16 r / δ) / ε.
//
// Omega does not validate its arguments (see Params.Validate).
func Omega(r int, epsilon, delta float64) float64 {
	rf := float64(r)
	return 16 * math.Sqrt(rf*math.Log(2/delta)) * math.Log(16*rf/delta) / epsilon
}

// Route names of Report.Route.
const (
	RouteGram = "gram" // eigendecomposition of the d×d Gram matrix
	RouteSVD  = "svd"  // thin SVD of the centred n×d matrix
)

// Report describes a projection for the curator's operator. It depends on the
// data (σ_min, the branch taken) and must never be sent to the modeler.
type Report struct {
	N, D, R  int
	SigmaMin float64 // σ_min of the centred data; 0 when n < d or rank-deficient
	Omega    float64 // ω of Algorithm 1
	Lifted   bool    // true when σ_min < ω and the singular values were lifted (step 6)
	Rank     int     // numerical rank of the centred data
	Route    string  // RouteGram or RouteSVD ("product" for ProjectGaussian)
	// Mechanism is MechanismLifted (Project) or MechanismGaussian (ProjectGaussian);
	// NoiseSD is the Gaussian noise's σ of ProjectGaussian (0 for Project).
	Mechanism string
	NoiseSD   float64
	// Sensitivity is the L2 sensitivity Δ that ProjectGaussian's noise was
	// calibrated to, sqrt(1 − 1/n)·‖M‖₂/√r (0 for Project). It depends on M
	// only, never on the data; the curator states the release's guarantee at
	// larger distances with it (dp.VectorGaussian.EpsilonAtDistance).
	Sensitivity float64
	// Noise is the mechanism ProjectGaussian calibrated and drew its noise from (nil
	// for Project), so that the release's guarantee is stated with the very
	// mechanism that made it (Gaussian.WholeRecord).
	Noise *dp.VectorGaussian
}

// Project runs Algorithm 1 of Kharkovskii et al. (2020) on the row-major n×d
// matrix x and returns the row-major n×r release Z with a report for the
// operator. x is not modified. M is drawn from src and discarded; it is never
// returned or logged.
//
// Project returns an error for invalid parameters, a zero Source, n < 2, d < 1
// or non-finite data; it panics if len(x) != n*d. It stops with ctx.Err() when
// ctx is cancelled.
func Project(ctx context.Context, x []float64, n, d int, p Params, src Source) (z []float64, rep Report, err error) {
	s, err := ProjectStream(ctx, x, n, d, p, src)
	if err != nil {
		return nil, Report{}, err
	}
	z, err = s.all()
	return z, s.Report(), err
}

// ProjectStream is Project computed while it is read (Stream): it draws M and
// factorises the data (steps 1 to 6), and returns the release as a stream of bytes
// whose rows are projected one window at a time. x must not change until the stream
// ends. It returns Project's errors, those about overflow in the product from Read.
func ProjectStream(ctx context.Context, x []float64, n, d int, p Params, src Source) (*Stream, error) {
	if err := checkInputs(ctx, x, n, d, p, src); err != nil {
		return nil, err
	}
	m := make([]float64, d*p.R)
	defer clear(m)
	src.normals(m)
	prod, rep, err := planLifted(ctx, x, n, d, m, p.R, Omega(p.R, p.Epsilon, p.Delta), routeAuto)
	if err != nil {
		return nil, err
	}
	return newStream(prod, rep), nil
}

// checkInputs validates what Project and ProjectGaussian take; it panics if
// len(x) != n*d.
func checkInputs(ctx context.Context, x []float64, n, d int, p Params, src Source) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if src.s == nil {
		return errors.New("projection: zero Source; use SecureSource (or SeededSource in simulations)")
	}
	if n < 2 {
		return fmt.Errorf("projection: need at least 2 rows to centre, got %d", n)
	}
	if d < 1 {
		return fmt.Errorf("projection: need at least 1 column, got %d", d)
	}
	if len(x) != n*d {
		panic(fmt.Sprintf("projection: len(x) = %d, want n*d = %d*%d", len(x), n, d))
	}
	if n > math.MaxInt/p.R {
		return fmt.Errorf("projection: %d×%d release is too large", n, p.R)
	}
	return ctx.Err()
}

type routeChoice int

const (
	routeAuto routeChoice = iota
	routeGram             // tests: use the Gram route whenever the Gram matrix is positive definite
	routeSVD              // tests: always use the SVD route
)

const (
	// liftTol bounds the estimated relative error of the smallest lifted
	// singular value on the Gram route (see the package documentation).
	liftTol = 1e-6
	eps     = 0x1p-52
)

// project is Algorithm 1 after parameter checks, with M (d×r, row-major) and ω
// given explicitly. With m = I_d and r = d it returns d^(−1/2)·X̃, which the
// tests use.
func project(ctx context.Context, x []float64, n, d int, m []float64, r int, omega float64, choice routeChoice) ([]float64, Report, error) {
	prod, rep, err := planLifted(ctx, x, n, d, m, r, omega, choice)
	if err != nil {
		return nil, rep, err
	}
	z, err := newStream(prod, rep).all()
	return z, rep, err
}

// planLifted factorises the data (steps 1 to 6 of Algorithm 1) and returns the
// product that computes Z from it. The product's matrix is derived from m but is a
// new one: the caller may clear m.
func planLifted(ctx context.Context, x []float64, n, d int, m []float64, r int, omega float64, choice routeChoice) (*product, Report, error) {
	rep := Report{N: n, D: d, R: r, Omega: omega, Mechanism: MechanismLifted}
	mean, err := columnMeans(ctx, x, n, d)
	if err != nil {
		return nil, rep, err
	}
	scale := 1 / math.Sqrt(float64(r))

	if n >= d && choice != routeSVD {
		gram, err := centredGram(ctx, x, mean, n, d)
		if err != nil {
			return nil, rep, err
		}
		b, ok := projectGram(gram, n, d, m, r, omega, scale, choice, &rep)
		if ok {
			return &product{ctx: ctx, a: x, mean: mean, n: n, k: d, b: b, r: r, scale: 1}, rep, nil
		}
	}
	a, k, b, err := projectSVD(ctx, x, mean, n, d, m, r, omega, scale, &rep)
	if err != nil {
		return nil, rep, err
	}
	return &product{ctx: ctx, a: a, n: n, k: k, b: b, r: r, scale: 1}, rep, nil
}

// checkFinite guards against overflow in the release (data near the float64
// range); it names no values.
func checkFinite(z []float64) error {
	for _, v := range z {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("projection: projected data overflow float64; rescale the data")
		}
	}
	return nil
}

// projectGram takes the Gram route when it is numerically sound: it returns the d×r
// matrix B with Z = X_c·B; ok is false when the caller must fall back to the SVD route.
func projectGram(gram []float64, n, d int, m []float64, r int, omega, scale float64, choice routeChoice, rep *Report) (b []float64, ok bool) {
	for _, v := range gram {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, false // overflow: dgesvd scales the matrix, Gram cannot
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(mat.NewSymDense(d, gram), true) {
		return nil, false
	}
	lambda := eig.Values(nil) // ascending
	lmin, lmax := lambda[0], lambda[d-1]
	if lmin <= 0 || lmax <= 0 {
		return nil, false
	}
	w2 := omega * omega
	tau := (float64(d) + math.Sqrt(float64(n))) * eps
	lifted := lmin < w2
	if choice == routeAuto {
		if math.Abs(lmin-w2) <= tau*lmax {
			return nil, false // branch decision within rounding error
		}
		if lifted {
			kappa := math.Sqrt(lmax / lmin)
			if 0.5*tau*kappa*kappa*kappa*w2/(lmin+w2) > liftTol {
				return nil, false
			}
		}
	}
	rep.Route = RouteGram
	rep.SigmaMin = math.Sqrt(lmin)
	rep.Rank = d
	rep.Lifted = lifted

	var bm mat.Dense
	mm := mat.NewDense(d, r, m)
	if !lifted {
		bm.Scale(scale, mm)
	} else {
		// A M = V diag(sqrt(1 + ω²/λ_j)) Vᵀ M.
		var v mat.Dense
		eig.VectorsTo(&v)
		var w mat.Dense
		w.Mul(v.T(), mm)
		for j := range d {
			f := scale * math.Sqrt(1+w2/lambda[j])
			row := w.RawRowView(j)
			for k := range row {
				row[k] *= f
			}
		}
		bm.Mul(&v, &w)
	}
	return denseData(&bm), true
}

// projectSVD factorises the centred copy of x and returns the n×k matrix A and the
// k×r matrix B with Z = A·B.
func projectSVD(ctx context.Context, x, mean []float64, n, d int, m []float64, r int, omega, scale float64, rep *Report) (a []float64, k int, b []float64, err error) {
	xc, err := centredCopy(ctx, x, mean, n, d)
	if err != nil {
		return nil, 0, nil, err
	}
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(n, d, xc), mat.SVDThin) {
		return nil, 0, nil, errors.New("projection: SVD of the centred data did not converge")
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, nil, err
	}
	sigma := svd.Values(nil) // descending, length k = min(n, d)
	k = len(sigma)
	tol := float64(max(n, d)) * eps * sigma[0]
	rank := 0
	for _, s := range sigma {
		if s > tol {
			rank++
		}
	}
	rep.Route = RouteSVD
	rep.Rank = rank
	if n >= d && rank == d {
		rep.SigmaMin = sigma[d-1]
	}
	rep.Lifted = rep.SigmaMin < omega

	mm := mat.NewDense(d, r, m)
	if !rep.Lifted {
		var bm mat.Dense
		bm.Scale(scale, mm)
		return xc, d, denseData(&bm), nil
	}
	// Z = U · diag(sqrt(σ_j² + ω²)) · Vᵀ M / sqrt(r).
	var u, v mat.Dense
	svd.UTo(&u) // n×k, orthonormal columns (also for σ_j = 0)
	svd.VTo(&v) // d×k
	var bm mat.Dense
	bm.Mul(v.T(), mm) // k×r
	for j := range k {
		f := scale * math.Hypot(sigma[j], omega)
		row := bm.RawRowView(j)
		for c := range row {
			row[c] *= f
		}
	}
	return denseData(&u), k, denseData(&bm), nil
}

// denseData returns the row-major backing slice of a, copying only if a has a
// stride larger than its column count.
func denseData(a *mat.Dense) []float64 {
	raw := a.RawMatrix()
	if raw.Stride == raw.Cols {
		return raw.Data[:raw.Rows*raw.Cols]
	}
	out := make([]float64, raw.Rows*raw.Cols)
	for i := range raw.Rows {
		copy(out[i*raw.Cols:], raw.Data[i*raw.Stride:i*raw.Stride+raw.Cols])
	}
	return out
}
