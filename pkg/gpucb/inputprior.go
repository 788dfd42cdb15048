package gpucb

import (
	"errors"
	"math"

	"gonum.org/v1/gonum/mat"
)

// rowPrior is the empirical-Bayes Gaussian prior of the noise-free rows and what it
// implies for the rows behind noisy candidates (package documentation, "Noisy
// candidates"): x ~ N(m, S) with S = Cov(z) − σ²I (eigenvalues below 0 set to 0), so
// that, in the eigenbasis V of S with eigenvalues s_k,
//
//	x | z ~ N(m + V Λ Vᵀ (z − m), V diag(p) Vᵀ),   λ_k = s_k/(s_k + σ²),  p_k = σ² λ_k.
type rowPrior struct {
	dim int
	// u holds the shrunk coordinates u_i = Λ Vᵀ (z_i − m) of every candidate,
	// row-major n × dim: the posterior means of the rows in the eigenbasis.
	u []float64
	// p holds the posterior variances p_k = σ² λ_k.
	p []float64
}

// newRowPrior estimates the prior from the n candidates (row-major n × dim) carrying
// noise of variance v > 0 per coordinate.
func newRowPrior(cands []float64, n, dim int, v float64) (*rowPrior, error) {
	mean := make([]float64, dim)
	for i := range n {
		for k, x := range cands[i*dim : (i+1)*dim] {
			mean[k] += x
		}
	}
	for k := range mean {
		mean[k] /= float64(n)
	}
	cov := mat.NewSymDense(dim, nil)
	c := make([]float64, dim)
	for i := range n {
		for k, x := range cands[i*dim : (i+1)*dim] {
			c[k] = x - mean[k]
		}
		for a := range dim {
			for b := a; b < dim; b++ {
				cov.SetSym(a, b, cov.At(a, b)+c[a]*c[b])
			}
		}
	}
	cov.ScaleSym(1/float64(n), cov)
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, errors.New("gpucb: the eigendecomposition of the candidates' covariance did not converge")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	lam := make([]float64, dim)
	pr := &rowPrior{dim: dim, u: make([]float64, n*dim), p: make([]float64, dim)}
	for k, ev := range vals {
		s := max(ev-v, 0)
		lam[k] = s / (s + v)
		pr.p[k] = v * lam[k]
	}
	vr := vecs.RawMatrix()
	for i := range n {
		for k, x := range cands[i*dim : (i+1)*dim] {
			c[k] = x - mean[k]
		}
		out := pr.u[i*dim : (i+1)*dim]
		for k := range dim {
			var s float64
			for a := range dim {
				s += vr.Data[a*vr.Stride+k] * c[a]
			}
			out[k] = lam[k] * s
		}
	}
	return pr, nil
}

// factor returns c = Π_k (l²/(l² + 2p_k))^{1/2}, the scale of the expected kernel between
// different candidates at lengthscale l.
func (pr *rowPrior) factor(l float64) float64 {
	var lc float64
	for _, p := range pr.p {
		lc += math.Log1p(2 * p / (l * l))
	}
	return math.Exp(-lc / 2)
}

// coords writes the kernel coordinates of every candidate at lengthscale l into out
// (n × dim): u_ik / sqrt(l² + 2p_k), so that the expected squared exponential between
// different candidates is c σ_y² exp(−‖out_i − out_j‖²/2).
func (pr *rowPrior) coords(l float64, out []float64) {
	w := make([]float64, pr.dim)
	for k, p := range pr.p {
		w[k] = 1 / math.Sqrt(l*l+2*p)
	}
	for i := range len(pr.u) / pr.dim {
		u := pr.u[i*pr.dim : (i+1)*pr.dim]
		o := out[i*pr.dim : (i+1)*pr.dim]
		for k := range u {
			o[k] = u[k] * w[k]
		}
	}
}
