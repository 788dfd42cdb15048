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
//
// It keeps O(dim²) numbers; the shrunk coordinates u_i = Λ Vᵀ (z_i − m) (the posterior
// means of the rows in the eigenbasis) are computed from the candidates when needed.
type rowPrior struct {
	dim  int
	mean []float64
	vt   []float64 // Vᵀ, row-major dim × dim: row k is the k-th eigenvector
	lam  []float64 // λ_k
	p    []float64 // posterior variances p_k = σ² λ_k
}

// newRowPrior estimates the prior from the n candidates (row-major n × dim) carrying
// noise of variance v > 0 per coordinate.
func newRowPrior(cands []float64, n, dim int, v float64) (*rowPrior, error) {
	mean := rowMean(cands, n, dim)
	acc := make([]float64, dim*dim) // upper triangle of Σ (z − m)(z − m)ᵀ
	c := make([]float64, dim)
	for i := range n {
		for k, x := range cands[i*dim : (i+1)*dim] {
			c[k] = x - mean[k]
		}
		for a, ca := range c {
			row := acc[a*dim : (a+1)*dim]
			for b := a; b < dim; b++ {
				row[b] += ca * c[b]
			}
		}
	}
	cov := mat.NewSymDense(dim, nil)
	for a := range dim {
		for b := a; b < dim; b++ {
			cov.SetSym(a, b, acc[a*dim+b]/float64(n))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(cov, true) {
		return nil, errors.New("gpucb: the eigendecomposition of the candidates' covariance did not converge")
	}
	vals := eig.Values(nil)
	var vecs mat.Dense
	eig.VectorsTo(&vecs)
	pr := &rowPrior{dim: dim, mean: mean, vt: make([]float64, dim*dim), lam: make([]float64, dim), p: make([]float64, dim)}
	for k, ev := range vals {
		s := max(ev-v, 0)
		pr.lam[k] = s / (s + v)
		pr.p[k] = v * pr.lam[k]
		for a := range dim {
			pr.vt[k*dim+a] = vecs.At(a, k)
		}
	}
	return pr, nil
}

// shrunk writes u = Λ Vᵀ (z − m) of one candidate z into u, each coordinate multiplied
// by w[k] (nil: 1).
func (pr *rowPrior) shrunk(z, w, u []float64) {
	dim := pr.dim
	for k := range dim {
		row := pr.vt[k*dim : (k+1)*dim]
		var s float64
		for a, x := range z[:dim] {
			s += row[a] * (x - pr.mean[a])
		}
		s *= pr.lam[k]
		if w != nil {
			s *= w[k]
		}
		u[k] = s
	}
}

// weights returns 1/sqrt(l² + 2p_k), the inverse effective lengthscales at l.
func (pr *rowPrior) weights(l float64) []float64 {
	w := make([]float64, pr.dim)
	for k, p := range pr.p {
		w[k] = 1 / math.Sqrt(l*l+2*p)
	}
	return w
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

// coords writes the kernel coordinates of the candidates cands (n × dim) at lengthscale
// l into out: u_ik / sqrt(l² + 2p_k), so that the expected squared exponential between
// different candidates is c σ_y² exp(−‖out_i − out_j‖²/2). O(n·dim²).
func (pr *rowPrior) coords(l float64, cands, out []float64) {
	w := pr.weights(l)
	dim := pr.dim
	for i := range len(cands) / dim {
		pr.shrunk(cands[i*dim:(i+1)*dim], w, out[i*dim:(i+1)*dim])
	}
}
