package learner

import (
	"context"
	"errors"
	"math"
)

// L-BFGS for the smooth convex objectives of this package (Nocedal & Wright,
// Numerical Optimization, 2nd ed., Algorithms 7.4 and 7.5), written here
// rather than taken from gonum/optimize, which pulls in a module
// (golang.org/x/tools, through gonum/stat/distmv) that privbo's go.sum does
// not carry.
//
// The line search uses only directional derivatives φ'(α) = ∇f(x + αd)·d,
// which stay accurate near the optimum where differences of function values
// are lost to rounding. For convex φ, φ(α) ≤ φ(0) + α φ'(α), so a step with
//
//	c₂ φ'(0) ≤ φ'(α) ≤ c₁ φ'(0),  c₁ = 10⁻⁴, c₂ = 0.9,
//
// satisfies both Wolfe conditions; a step with 0 < φ'(α) ≤ −c₂ φ'(0) is
// accepted when the function values show the sufficient decrease. φ' is
// non-decreasing, so bisection brackets such a step.

const (
	lbfgsMemory = 10
	wolfeC1     = 1e-4
	wolfeC2     = 0.9
)

var errLineSearch = errors.New("line search made no progress")

// lbfgs minimises f from x, overwritten with the result. fg returns f(x) and
// writes ∇f(x) into g. It stops when ‖∇f‖∞ ≤ tol (returning a nil error),
// after maxIter iterations, when the line search fails (floating point
// exhausted) or when ctx is done; it returns the final gradient's infinity
// norm and the iterations used.
func lbfgs(ctx context.Context, fg func(x, g []float64) float64, x []float64, tol float64, maxIter int) (gnorm float64, iters int, err error) {
	n := len(x)
	g := make([]float64, n)
	d := make([]float64, n)
	xNew := make([]float64, n)
	gNew := make([]float64, n)
	alpha := make([]float64, lbfgsMemory)
	rho := make([]float64, lbfgsMemory)
	s := make([][]float64, lbfgsMemory)
	y := make([][]float64, lbfgsMemory)
	for i := range s {
		s[i] = make([]float64, n)
		y[i] = make([]float64, n)
	}
	stored, next := 0, 0 // number of (s, y) pairs kept; slot of the next one

	f := fg(x, g)
	for iters = 0; ; iters++ {
		gnorm = infNorm(g)
		if !(gnorm > tol) { // also stops on NaN, reported below
			if math.IsNaN(gnorm) || math.IsNaN(f) {
				return gnorm, iters, errors.New("objective is NaN")
			}
			return gnorm, iters, nil
		}
		if iters >= maxIter {
			return gnorm, iters, errors.New("iteration limit reached")
		}
		if err := ctx.Err(); err != nil {
			return gnorm, iters, err
		}
		// Two-loop recursion: d = −H g.
		copy(d, g)
		for k := 0; k < stored; k++ {
			j := (next - 1 - k + lbfgsMemory) % lbfgsMemory
			alpha[j] = rho[j] * dot(s[j], d)
			axpy(d, -alpha[j], y[j])
		}
		gamma := 1.0
		if stored > 0 {
			j := (next - 1 + lbfgsMemory) % lbfgsMemory
			gamma = dot(s[j], y[j]) / dot(y[j], y[j])
		} else {
			gamma = 1 / math.Max(1, norm(g)) // first step: length ≤ 1
		}
		for i := range d {
			d[i] *= gamma
		}
		for k := stored - 1; k >= 0; k-- {
			j := (next - 1 - k + lbfgsMemory) % lbfgsMemory
			beta := rho[j] * dot(y[j], d)
			axpy(d, alpha[j]-beta, s[j])
		}
		for i := range d {
			d[i] = -d[i]
		}
		slope := dot(g, d)
		if !(slope < 0) { // not a descent direction: restart from −g
			stored = 0
			for i := range d {
				d[i] = -g[i] / math.Max(1, norm(g))
			}
			slope = dot(g, d)
		}
		fNew, ok := lineSearch(fg, x, d, f, slope, xNew, gNew)
		if !ok {
			return gnorm, iters, errLineSearch
		}
		// Curvature pair; y·s > 0 for a strictly convex f, skip it otherwise.
		for i := range x {
			s[next][i] = xNew[i] - x[i]
			y[next][i] = gNew[i] - g[i]
		}
		if sy := dot(s[next], y[next]); sy > 1e-300 {
			rho[next] = 1 / sy
			next = (next + 1) % lbfgsMemory
			stored = min(stored+1, lbfgsMemory)
		}
		copy(x, xNew)
		copy(g, gNew)
		f = fNew
	}
}

// lineSearch looks for a step α along d satisfying the conditions described
// above, starting at α = 1. It leaves x + αd in xNew and the gradient there
// in gNew and returns f(x + αd).
func lineSearch(fg func(x, g []float64) float64, x, d []float64, f0, slope0 float64, xNew, gNew []float64) (float64, bool) {
	lo, hi := 0.0, math.Inf(1)
	a := 1.0
	for range 100 {
		for i := range x {
			xNew[i] = x[i] + a*d[i]
		}
		f := fg(xNew, gNew)
		slope := dot(gNew, d)
		switch {
		case math.IsNaN(f) || math.IsInf(f, 0) || math.IsNaN(slope):
			hi = a
		case slope < wolfeC2*slope0: // still steep: go further
			lo = a
		case slope <= wolfeC1*slope0: // both Wolfe conditions (convexity)
			return f, true
		case slope <= -wolfeC2*slope0 && f <= f0+wolfeC1*a*slope0:
			return f, true
		default: // past the minimum along d
			hi = a
		}
		if math.IsInf(hi, 1) {
			a *= 2
		} else {
			next := lo + (hi-lo)/2
			if next == lo || next == hi {
				break
			}
			a = next
		}
	}
	return 0, false
}
