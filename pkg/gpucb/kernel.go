package gpucb

import (
	"fmt"
	"math"
	"slices"
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
	out = out[:hi-lo]
	if g.cfg.Kernel != SquaredExponential && g.cfg.Kernel != Matern52 {
		panic("gpucb: invalid kernel")
	}
	k := 0
	for ; k+4 <= len(out); k += 4 {
		x := lo + k
		v := g.kernel4(zi, &[4]int{x * dim, (x + 1) * dim, (x + 2) * dim, (x + 3) * dim})
		o := out[k : k+4 : k+4]
		o[0], o[1], o[2], o[3] = v[0], v[1], v[2], v[3]
	}
	for ; k < len(out); k++ {
		out[k] = g.kernelAt(zi, g.kc[(lo+k)*dim:(lo+k+1)*dim])
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

// kernel4 returns kernelAt(zi, g.kc[off[k]:off[k]+dim]) for four candidates
// (off[k] = candidate·dim), the four at once (seKernelRows4AVX, or sqDist4AVX and
// exp4). It returns the values rather than storing them so that a caller filling a
// new row of V writes its pages without reading them first (a read maps the zero
// page, and the write then faults a second time).
func (g *Posterior) kernel4(zi []float64, off *[4]int) [4]float64 {
	dim := g.dim
	zi = zi[:dim]
	for _, o := range off {
		if o < 0 || o+dim > len(g.kc) {
			panic("gpucb: kernel4 offset out of range") // the assembly reads kc[o : o+dim]
		}
	}
	var out [4]float64
	if useAVX2 {
		if g.cfg.Kernel == SquaredExponential && seKernelRows4AVX(out[:], zi, g.kc, off, []int{0}, g.kern.sv, g.kern.coef, &exp2Frac, &expConst, dim) == 1 {
			return out
		}
		sqDist4AVX(&out, zi, g.kc, off)
	} else {
		for k, o := range off {
			out[k] = sqDist(zi, g.kc[o:o+dim])
		}
	}
	sv, c := g.kern.sv, g.kern.coef
	if g.cfg.Kernel == Matern52 {
		var s [4]float64
		for k, d := range out {
			s[k] = float64(c * math.Sqrt(d))
			out[k] = -s[k]
		}
		exp4(&out)
		for k, e := range out {
			out[k] = sv * (1 + s[k] + s[k]*s[k]/3) * e
		}
		return out
	}
	for k, d := range out {
		out[k] = c * d
	}
	exp4(&out)
	for k, e := range out {
		out[k] = sv * e
	}
	return out
}

// kernelRows4 sets kv[4i+k] = kernel4 of the coordinates at roff[i] and
// off[k], for every i: on AVX2 and the squared-exponential kernel in one call
// of the assembly per run of rows whose arguments it takes (seKernelRows4AVX).
func (g *Posterior) kernelRows4(kv []float64, off *[4]int, roff []int) {
	dim := g.dim
	kv = kv[:4*len(roff)]
	bad := func(o int) bool { return o < 0 || o+dim > len(g.kc) } // the assembly reads kc[o : o+dim]
	if slices.ContainsFunc(off[:], bad) || slices.ContainsFunc(roff, bad) {
		panic("gpucb: kernelRows4 offset out of range")
	}
	for i := 0; i < len(roff); i++ {
		if useAVX2 && g.cfg.Kernel == SquaredExponential {
			if i += seKernelRows4AVX(kv[4*i:], g.kc, g.kc, off, roff[i:], g.kern.sv, g.kern.coef, &exp2Frac, &expConst, dim); i == len(roff) {
				return
			}
		}
		v := g.kernel4(g.kc[roff[i]:roff[i]+dim], off)
		copy(kv[4*i:4*i+4], v[:])
	}
}

func seKernel(sv, c float64, a, b []float64) float64 { return sv * expNonPos(c*sqDist(a, b)) }

func maternKernel(sv, c float64, a, b []float64) float64 {
	s := float64(c * math.Sqrt(sqDist(a, b)))
	return sv * (1 + s + s*s/3) * expNonPos(-s)
}

// exp2Frac[j] = 2^(j/32).
var exp2Frac = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return t
}()

// expConst holds expNonPos's constants for the assembly (exp4): 32/ln2, 0.5,
// ln2/32 split in two as in fdlibm's e_exp.c, then the Taylor coefficients.
var expConst = [10]float64{32 / math.Ln2, 0.5, 6.93147180369123816490e-01 / 32, 1.90821492927058770002e-10 / 32, 1, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720, -700}

// expNonPos returns e^x for x ≤ 0, about twice as fast as math.Exp with a
// relative error below 1e-15 (checked against math.Exp in the tests). With
// x = k·ln2/32 + r, |r| ≤ ln2/64: e^x = 2^⌊k/32⌋ · 2^((k mod 32)/32) · e^r, e^r
// by its degree-6 Taylor polynomial (truncation error < r⁷/7! ≈ 3e-18).
// Arguments outside [−700, 0] (and NaN) go to math.Exp. exp4 computes it for
// four arguments with the same operations (the conversions keep the compiler
// from fusing any of them).
func expNonPos(x float64) float64 {
	const (
		invStep = 32 / math.Ln2
		stepHi  = 6.93147180369123816490e-01 / 32 // ln2/32 split as in fdlibm's e_exp.c
		stepLo  = 1.90821492927058770002e-10 / 32
	)
	if !(x >= -700 && x <= 0) {
		return math.Exp(x)
	}
	k := int(float64(x*invStep) - 0.5) // round to nearest (x ≤ 0; conversion truncates towards 0)
	fk := float64(k)
	r := (x - float64(fk*stepHi)) - float64(fk*stepLo)
	r2 := r * r
	p := (1 + r) + float64(r2*(0.5+float64(r*(1.0/6)))) + float64(float64(r2*r2)*(float64(1.0/24+float64(r*(1.0/120)))+float64(r2*(1.0/720))))
	return p * exp2Frac[k&31] * math.Float64frombits(uint64((k>>5)+1023)<<52)
}

// exp4 sets x[k] = expNonPos(x[k]) for the four values, bit for bit.
func exp4(x *[4]float64) {
	if !useAVX2 {
		for k := range x {
			x[k] = expNonPos(x[k])
		}
		return
	}
	in := *x
	exp4AVX(x, &exp2Frac, &expConst)
	for k, v := range in {
		if !(v >= -700 && v <= 0) {
			x[k] = math.Exp(v)
		}
	}
}
