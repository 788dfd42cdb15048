package projection

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privbo/privbo/pkg/dp"
)

// CryptoNoise is the noise of production releases for ProjectGaussian: every row
// partition draws from crypto/rand.
func CryptoNoise(int) *dp.Source { return dp.CryptoSource() }

// ProjectGaussian releases a noisy random projection of the row-major n×d
// matrix x (Kenthapadi, Korolova, Mironov & Mishra, "Privacy via the
// Johnson–Lindenstrauss transform", 2013, which the PO-GP-UCB paper names as
// future work):
//
//  1. Centre the columns: X ← X − 1 1ᵀ X / n.
//  2. Draw a Gaussian d×r matrix from src and orthonormalise it (see
//     orthonormalise): r^(−1/2) M is √(d/r)·Q with Q's r columns orthonormal
//     and uniformly distributed when r ≤ d, and an isometry (orthonormal rows)
//     when r > d.
//  3. Release Z = r^(−1/2) X M + E, E n×r with i.i.d. Gaussian entries of
//     standard deviation σ from dp.VectorGaussian (exact discrete Gaussian on
//     a fine lattice, row partition k drawing from noise(k)) for L2 sensitivity
//     Δ = sqrt(1 − 1/n) · ‖M‖₂ / √r.
//
// Sensitivity. On neighbours (one row i changes by v, ‖v‖₂ ≤ 1) the centred
// matrix changes by (e_i − 1/n·1) vᵀ, a rank-one matrix of Frobenius norm
// sqrt(1 − 1/n)‖v‖₂, so r^(−1/2) X M changes by at most Δ in Frobenius norm
// (‖vᵀM‖₂ ≤ ‖M‖₂). M is independent of the data, so for every M the release
// is the Gaussian mechanism with sensitivity Δ, and (ε, δ)-DP; so is the
// mixture over M. Unlike Algorithm 1, whose release lies in the column space
// of the centred data (see the package documentation), the noise spans all
// of Rⁿˣʳ. σ is proportional to ‖r^(−1/2) M‖₂·sqrt(2 log(1/δ))/ε and does not
// depend on the data; squared distances ‖z − z′‖² keep the JL distortion and gain a
// bias of 2rσ² and a variance of 8rσ⁴ + 8σ²‖a‖² (a the noise-free difference).
//
// The argument is in exact arithmetic. The computed product differs from the
// exact one by about d·2⁻⁵²·‖x‖·‖M‖ per entry, far below the noise's lattice
// step (2⁻²⁰ of σ or finer) for data scaled to the protected unit (the
// curator's private scalings clip rows at norm 25); data of enormous magnitude
// should be rescaled first.
//
// The guarantee is about the x it is given: it holds for the dataset only if a
// change of one record changes one row of x by at most one unit and no other row
// (package dataset's schema, private, fixed and none scalings, which clip; not
// its *-nonprivate ones). TestAuditGaussianProjection checks this end to end.
//
// Cost: O(n·d·r) for the product plus n·r exact discrete Gaussian draws
// (dp.CryptoSource: AES-CTR keyed from crypto/rand; about 10 million draws per
// CPU-second on machine words, spread over GOMAXPROCS goroutines), which
// dominate for large n. Report.NoiseSD holds σ and Report.Sensitivity Δ (both
// depend only on M, never on the data). The rows are projected and noised a
// window at a time (ProjectGaussianStream streams them); row partition p of
// every window draws from noise(p), continuing where the previous window left it.
//
// Why orthonormal. A projection and its noise trade distortion against
// sensitivity. r^(−1/2) times an i.i.d. Gaussian M preserves squared distances
// in expectation (the JL lemma), but its norm ‖r^(−1/2) M‖₂ ≈ √(d/r) + 1 sets
// the noise. √(d/r)·Q with orthonormal Q preserves squared distances in
// expectation as well (E‖Qᵀv‖² = (r/d)‖v‖² for a uniformly random Q; the
// random-subspace proof of the JL lemma, Dasgupta & Gupta 2003), with norm
// exactly √(d/r): the noise shrinks by the factor √(d/r)/(√(d/r) + 1), about 0.59
// at d = 10, r = 5. With r ≥ d no distortion is needed at all: an isometry keeps
// every distance and has norm 1 (against 1 + √(d/r) ≈ 1.77 at d = 9, r = 15), so
// Z is the centred data in a random orthonormal basis plus noise. The trade-off
// that remains is r itself: for r < d, larger r lowers the distortion (relative
// spread of ‖Qᵀv‖² about √(2/r)) and the per-coordinate noise (σ ∝ √(d/r)), but
// adds r coordinates of noise to every squared distance (bias 2rσ²).
func ProjectGaussian(ctx context.Context, x []float64, n, d int, p Params, src Source, noise func(part int) *dp.Source) (z []float64, rep Report, err error) {
	s, err := ProjectGaussianStream(ctx, x, n, d, p, src, noise)
	if err != nil {
		return nil, Report{}, err
	}
	z, err = s.all()
	return z, s.Report(), err
}

// ProjectGaussianStream is ProjectGaussian computed while it is read (Stream): it draws
// M, calibrates the noise and reads the column means of x, and returns the release as a
// stream of bytes whose rows are projected and noised one window at a time. x must not
// change until the stream ends. It returns ProjectGaussian's errors, those about the
// data (non-finite values, overflow) from Read.
func ProjectGaussianStream(ctx context.Context, x []float64, n, d int, p Params, src Source, noise func(part int) *dp.Source) (*Stream, error) {
	if noise == nil {
		return nil, errors.New("projection: nil noise sources; use CryptoNoise")
	}
	if err := checkInputs(ctx, x, n, d, p, src); err != nil {
		return nil, err
	}
	r := p.R
	m := make([]float64, d*r)
	keep := false
	defer func() {
		if !keep {
			clear(m)
		}
	}()
	src.normals(m)
	if !src.fixedMatrix() {
		if err := orthonormalise(m, d, r); err != nil {
			return nil, err
		}
	}
	rep := Report{N: n, D: d, R: r, Mechanism: MechanismGaussian, Route: "product"}
	scale := 1 / math.Sqrt(float64(r))
	var svd mat.SVD
	if !svd.Factorize(mat.NewDense(d, r, m), mat.SVDNone) {
		return nil, errors.New("projection: the singular values of M did not converge")
	}
	sens := GaussianSensitivity(n, svd.Values(nil)[0]*scale)
	mech, err := dp.NewVectorGaussian(p.Epsilon, p.Delta, sens, n*r)
	if err != nil {
		return nil, fmt.Errorf("projection: %w", err)
	}
	rep.NoiseSD, rep.Sensitivity, rep.Noise = mech.Scale(), sens, mech
	mean, err := columnMeans(ctx, x, n, d)
	if err != nil {
		return nil, err
	}
	keep = true
	// The draws dominate the cost: every window's row partitions are noised
	// concurrently, each from its own source.
	return newStream(&product{ctx: ctx, a: x, mean: mean, n: n, k: d, b: m, r: r, scale: scale, mech: mech, noise: noise}, rep), nil
}

// orthonormalise replaces the row-major d×r Gaussian matrix m by √r times a matrix
// with orthonormal columns (r ≤ d: √d·Q, so that r^(−1/2)·m = √(d/r)·Q) or
// orthonormal rows (r > d: √r·Qᵀ, so that r^(−1/2)·m is an isometry). Q comes from
// the QR factorisation of the Gaussian matrix (of its transpose when r > d) with
// the signs of R's diagonal moved into Q, which makes Q uniformly distributed
// (Haar) on the Stiefel manifold (Mezzadri 2007).
func orthonormalise(m []float64, d, r int) error {
	rows, cols := d, r
	a := mat.NewDense(d, r, append([]float64(nil), m...))
	if r > d {
		rows, cols = r, d
		a = mat.DenseCopyOf(a.T())
	}
	var qr mat.QR
	qr.Factorize(a)
	var q, rr mat.Dense
	qr.QTo(&q)
	qr.RTo(&rr)
	scale := math.Sqrt(float64(d))
	if r > d {
		scale = math.Sqrt(float64(r))
	}
	out := mat.NewDense(rows, cols, nil)
	for j := range cols {
		sign := 1.0
		if rr.At(j, j) < 0 {
			sign = -1
		} else if rr.At(j, j) == 0 {
			return errors.New("projection: the Gaussian matrix drawn for M is singular")
		}
		for i := range rows {
			out.Set(i, j, sign*scale*q.At(i, j))
		}
	}
	if r > d {
		out = mat.DenseCopyOf(out.T())
	}
	copy(m, out.RawMatrix().Data)
	return nil
}

// GaussianSensitivity is the L2 sensitivity of the centred release X_c·M/√r of n rows
// when one row moves by one unit, for a scaled projection of operator norm opNorm
// (‖M‖₂/√r): √(1 − 1/n)·opNorm, rounded up by a relative 1e-12 to cover LAPACK's
// rounding of the norm. It depends on public quantities only, so a modeler can predict
// the noise of a release it has not asked for yet (NominalNoiseSD).
func GaussianSensitivity(n int, opNorm float64) float64 {
	return math.Sqrt(1-1/float64(n)) * opNorm * (1 + 1e-12)
}
