package gpucb

import (
	"fmt"
	"math"
	"strings"
)

// Kernel selects the covariance function of the GP prior.
type Kernel int

const (
	// SquaredExponential is k(z, z') = σ_y² exp(−‖z − z'‖² / (2 l²)).
	SquaredExponential Kernel = iota
	// Matern52 is k(z, z') = σ_y² (1 + √5 r/l + 5 r²/(3 l²)) exp(−√5 r/l), r = ‖z − z'‖.
	Matern52
)

// String returns the flag spelling of k: "se" or "matern52".
func (k Kernel) String() string {
	switch k {
	case SquaredExponential:
		return "se"
	case Matern52:
		return "matern52"
	}
	return fmt.Sprintf("Kernel(%d)", int(k))
}

// ParseKernel parses a kernel name as written by Kernel.String ("se",
// "matern52"; case-insensitive, surrounding space ignored).
func ParseKernel(s string) (Kernel, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "se":
		return SquaredExponential, nil
	case "matern52":
		return Matern52, nil
	}
	return 0, fmt.Errorf("gpucb: unknown kernel %q (want \"se\" or \"matern52\")", s)
}

func (k Kernel) valid() bool { return k == SquaredExponential || k == Matern52 }

// kernelParams are the constants kernelRow needs (see "Noisy candidates" in the package
// documentation).
type kernelParams struct {
	// sv multiplies the kernel between different candidates: σ_y², or c·σ_y² under input
	// noise (rowPrior.factor).
	sv float64
	// coef is −1/(2 l²) for the squared exponential and √5/l for Matérn 5/2 on the
	// candidates themselves; under input noise the kernel coordinates are already
	// divided by the effective lengthscales, and coef is −1/2 and √5.
	coef float64
}

// prepareKernel sets g.kern and, under input noise, the kernel coordinates g.kc for the
// current configuration.
func (g *Posterior) prepareKernel() {
	l := g.cfg.Lengthscale
	if g.prior == nil {
		g.kc = g.cands
		if g.cfg.Kernel == Matern52 {
			g.kern = kernelParams{sv: g.cfg.SignalVariance, coef: math.Sqrt(5) / l}
		} else {
			g.kern = kernelParams{sv: g.cfg.SignalVariance, coef: -1 / (2 * l * l)}
		}
		return
	}
	if g.kc == nil { // the prior is set once, in New: g.kc never aliases g.cands here
		g.kc = make([]float64, len(g.cands))
	}
	g.prior.coords(l, g.cands, g.kc)
	sv := g.cfg.SignalVariance * g.prior.factor(l)
	if g.cfg.Kernel == Matern52 {
		g.kern = kernelParams{sv: sv, coef: math.Sqrt(5)}
	} else {
		g.kern = kernelParams{sv: sv, coef: -0.5}
	}
}

// DebiasLengthscale returns the lengthscale rule's value for noise-free rows from m,
// DefaultLengthscale of rows z = x + e carrying N(0, σ²I) noise in dim coordinates:
// E‖z − z̄‖² ≈ ‖x − x̄‖² + dim·σ², so the median distance to the mean is inflated and
// sqrt(m² − dim·σ²) estimates the noise-free one. When the noise accounts for nearly
// all of m² the difference says little, and the result is kept at m/10 or more.
func DebiasLengthscale(m float64, dim int, inputNoiseVariance float64) float64 {
	return math.Sqrt(max(m*m-float64(dim)*inputNoiseVariance, m*m/100))
}

// kernelRow sets out[z−lo] = k(zi, cands[z]) for z in [lo, hi), zi being the kernel
// coordinates of candidate i (g.kc): the expected kernel under input noise for z ≠ i,
// and k(z_i, z_i) = σ_y² for z = i.
func (g *Posterior) kernelRow(i int, zi []float64, lo, hi int, out []float64) {
	dim := g.dim
	kp := g.kern
	sv := kp.sv
	out = out[:hi-lo]
	switch g.cfg.Kernel {
	case SquaredExponential:
		c := kp.coef
		for k := range out {
			out[k] = seKernel(sv, c, zi, g.kc[(lo+k)*dim:(lo+k+1)*dim])
		}
	case Matern52:
		c := kp.coef
		for k := range out {
			out[k] = maternKernel(sv, c, zi, g.kc[(lo+k)*dim:(lo+k+1)*dim])
		}
	default:
		panic("gpucb: invalid kernel")
	}
	// A candidate's covariance with itself keeps the full σ_y²: its noise is the same
	// draw on both sides.
	if lo <= i && i < hi {
		out[i-lo] = g.kdiag
	}
}

// kernelAt returns k between the different candidates whose kernel coordinates
// are zi and row, as kernelRow computes it.
func (g *Posterior) kernelAt(zi, row []float64) float64 {
	if g.cfg.Kernel == Matern52 {
		return maternKernel(g.kern.sv, g.kern.coef, zi, row)
	}
	return seKernel(g.kern.sv, g.kern.coef, zi, row)
}

func seKernel(sv, c float64, a, b []float64) float64 { return sv * expNonPos(c*sqDist(a, b)) }

func maternKernel(sv, c float64, a, b []float64) float64 {
	s := c * math.Sqrt(sqDist(a, b))
	return sv * (1 + s + s*s/3) * expNonPos(-s)
}

// sqDist returns ‖a − b‖², with four partial sums to shorten the
// floating-point dependency chain.
func sqDist(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	k := 0
	for ; k+4 <= len(a); k += 4 {
		d0 := a[k] - b[k]
		d1 := a[k+1] - b[k+1]
		d2 := a[k+2] - b[k+2]
		d3 := a[k+3] - b[k+3]
		s0 += d0 * d0
		s1 += d1 * d1
		s2 += d2 * d2
		s3 += d3 * d3
	}
	for ; k < len(a); k++ {
		d := a[k] - b[k]
		s0 += d * d
	}
	return (s0 + s1) + (s2 + s3)
}

// exp2Frac[j] = 2^(j/32).
var exp2Frac = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return t
}()

// expNonPos returns e^x for x ≤ 0, about twice as fast as math.Exp with a
// relative error below 1e-15 (checked against math.Exp in the tests). With
// x = k·ln2/32 + r, |r| ≤ ln2/64: e^x = 2^⌊k/32⌋ · 2^((k mod 32)/32) · e^r, e^r
// by its degree-6 Taylor polynomial (truncation error < r⁷/7! ≈ 3e-18).
// Arguments outside [−700, 0] (and NaN) go to math.Exp.
func expNonPos(x float64) float64 {
	const (
		invStep = 32 / math.Ln2
		stepHi  = 6.93147180369123816490e-01 / 32 // ln2/32 split as in fdlibm's e_exp.c
		stepLo  = 1.90821492927058770002e-10 / 32
	)
	if !(x >= -700 && x <= 0) {
		return math.Exp(x)
	}
	k := int(x*invStep - 0.5) // round to nearest (x ≤ 0; conversion truncates towards 0)
	fk := float64(k)
	r := (x - fk*stepHi) - fk*stepLo
	r2 := r * r
	p := (1 + r) + r2*(0.5+r*(1.0/6)) + r2*r2*((1.0/24+r*(1.0/120))+r2*(1.0/720))
	return p * exp2Frac[k&31] * math.Float64frombits(uint64((k>>5)+1023)<<52)
}
