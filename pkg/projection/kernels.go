package projection

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	// blockRows is the number of rows processed between cancellation checks
	// and summed into a fresh partial before joining a partition's total.
	blockRows = 256
	// maxParts bounds the number of row partitions. Partitions are a fixed
	// function of n (not of the worker count), which keeps sums deterministic.
	maxParts = 16
)

// numParts returns the number of row partitions for n rows.
func numParts(n int) int {
	return min((n+blockRows-1)/blockRows, maxParts)
}

// partRange returns the rows [lo, hi) of partition p out of parts.
func partRange(n, parts, p int) (lo, hi int) {
	return p * n / parts, (p + 1) * n / parts
}

// forEachPart calls fn for every partition of n rows on up to GOMAXPROCS
// goroutines and returns the first error (in partition order).
func forEachPart(n, parts int, fn func(p, lo, hi int) error) error {
	workers := min(runtime.GOMAXPROCS(0), parts)
	errs := make([]error, parts)
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !stop.Load() {
				p := int(next.Add(1) - 1)
				if p >= parts {
					return
				}
				lo, hi := partRange(n, parts, p)
				if err := fn(p, lo, hi); err != nil {
					errs[p] = err
					stop.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// columnMeans returns the column means of the row-major n×d matrix x and
// reports non-finite entries (by position only, never by value).
func columnMeans(ctx context.Context, x []float64, n, d int) ([]float64, error) {
	parts := numParts(n)
	sums := make([]float64, parts*d)
	err := forEachPart(n, parts, func(p, lo, hi int) error {
		total := sums[p*d : (p+1)*d]
		block := make([]float64, d)
		for b := lo; b < hi; b += blockRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			e := min(b+blockRows, hi)
			clear(block)
			for i := b; i < e; i++ {
				row := x[i*d : i*d+d]
				for j, v := range row {
					block[j] += v
				}
			}
			for j, s := range block {
				if math.IsNaN(s) || math.IsInf(s, 0) {
					return nonFinite(x, b, e, d)
				}
				total[j] += s
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mean := make([]float64, d)
	for p := range parts {
		for j := range d {
			mean[j] += sums[p*d+j]
		}
	}
	for j := range mean {
		if math.IsInf(mean[j], 0) {
			return nil, fmt.Errorf("projection: column %d: sum overflows float64; rescale the data", j)
		}
		mean[j] /= float64(n)
	}
	return mean, nil
}

// nonFinite locates the first NaN or ±Inf among rows [lo, hi). If there is
// none, the finite values overflowed when summed.
func nonFinite(x []float64, lo, hi, d int) error {
	for i := lo; i < hi; i++ {
		for j, v := range x[i*d : i*d+d] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("projection: row %d, column %d: value is not finite", i, j)
			}
		}
	}
	return fmt.Errorf("projection: rows %d to %d: values overflow float64 when summed; rescale the data", lo, hi-1)
}

// centreRows writes rows [lo, hi) of x minus mean into dst (row-major, d columns).
func centreRows(dst, x, mean []float64, lo, hi, d int) {
	for i := lo; i < hi; i++ {
		row := x[i*d : i*d+d]
		out := dst[(i-lo)*d : (i-lo)*d+d]
		out = out[:len(row)]
		m := mean[:len(row)]
		for j, v := range row {
			out[j] = v - m[j]
		}
	}
}

// centredGram returns the d×d matrix (X − 1 meanᵀ)ᵀ(X − 1 meanᵀ), row-major and
// symmetric, summed block by block in a fixed order.
func centredGram(ctx context.Context, x, mean []float64, n, d int) ([]float64, error) {
	parts := numParts(n)
	partial := make([]float64, parts*d*d)
	err := forEachPart(n, parts, func(p, lo, hi int) error {
		total := partial[p*d*d : (p+1)*d*d]
		buf := make([]float64, blockRows*d)
		g := make([]float64, d*d)
		for b := lo; b < hi; b += blockRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			e := min(b+blockRows, hi)
			centreRows(buf, x, mean, b, e, d)
			clear(g)
			syrkUpper(g, buf, e-b, d)
			for k, v := range g {
				total[k] += v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	gram := make([]float64, d*d)
	for p := range parts {
		for k, v := range partial[p*d*d : (p+1)*d*d] {
			gram[k] += v
		}
	}
	for i := range d {
		for j := i + 1; j < d; j++ {
			gram[j*d+i] = gram[i*d+j]
		}
	}
	return gram, nil
}

// syrkUpper adds aᵀa to the upper triangle of the d×d matrix g, where a is a
// row-major rows×d block. Four rows are folded in per sweep over g.
func syrkUpper(g, a []float64, rows, d int) {
	k := 0
	for ; k+4 <= rows; k += 4 {
		r0 := a[k*d : k*d+d]
		r1 := a[(k+1)*d : (k+1)*d+d]
		r2 := a[(k+2)*d : (k+2)*d+d]
		r3 := a[(k+3)*d : (k+3)*d+d]
		for i := range d {
			x0, x1, x2, x3 := r0[i], r1[i], r2[i], r3[i]
			gi := g[i*d+i : i*d+d]
			s0 := r0[i:][:len(gi)]
			s1 := r1[i:][:len(gi)]
			s2 := r2[i:][:len(gi)]
			s3 := r3[i:][:len(gi)]
			for j := range gi {
				gi[j] += x0*s0[j] + x1*s1[j] + x2*s2[j] + x3*s3[j]
			}
		}
	}
	for ; k < rows; k++ {
		r0 := a[k*d : k*d+d]
		for i := range d {
			x0 := r0[i]
			gi := g[i*d+i : i*d+d]
			s0 := r0[i:][:len(gi)]
			for j := range gi {
				gi[j] += x0 * s0[j]
			}
		}
	}
}

// gemmRows sets z = a·b for the row-major rows×k block a, k×r matrix b and
// rows×r block z.
func gemmRows(z, a, b []float64, rows, k, r int) {
	for i := range rows {
		zi := z[i*r : i*r+r]
		clear(zi)
		ai := a[i*k : i*k+k]
		l := 0
		for ; l+4 <= k; l += 4 {
			a0, a1, a2, a3 := ai[l], ai[l+1], ai[l+2], ai[l+3]
			b0 := b[l*r:][:len(zi)]
			b1 := b[(l+1)*r:][:len(zi)]
			b2 := b[(l+2)*r:][:len(zi)]
			b3 := b[(l+3)*r:][:len(zi)]
			for j := range zi {
				zi[j] += a0*b0[j] + a1*b1[j] + a2*b2[j] + a3*b3[j]
			}
		}
		for ; l < k; l++ {
			a0 := ai[l]
			b0 := b[l*r:][:len(zi)]
			for j := range zi {
				zi[j] += a0 * b0[j]
			}
		}
	}
}

// centredCopy returns X − 1 meanᵀ as a new row-major n×d slice.
func centredCopy(ctx context.Context, x, mean []float64, n, d int) ([]float64, error) {
	xc := make([]float64, n*d)
	err := forEachPart(n, numParts(n), func(_, lo, hi int) error {
		for b := lo; b < hi; b += blockRows {
			if err := ctx.Err(); err != nil {
				return err
			}
			e := min(b+blockRows, hi)
			centreRows(xc[b*d:e*d], x, mean, b, e, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return xc, nil
}
