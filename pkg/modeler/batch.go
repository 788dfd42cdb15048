package modeler

import (
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/gpucb"
)

// chooseBatch returns the next q rows, GP-BUCB style (package documentation): the first
// is the sequential GP-UCB choice of the real posterior; for q > 1 the real answers are
// replayed, standardised, into a scratch GP, and each chosen row enters it with its
// posterior mean as a stand-in before the next is chosen. The scratch GP (nil for q = 1)
// is returned for inspection; the real posterior is not touched.
func (s *session) chooseBatch(q int) ([]int, *gpucb.GP, error) {
	if q < 1 {
		panic(fmt.Sprintf("modeler: chooseBatch(%d)", q))
	}
	first, err := s.gp.Next()
	if err != nil {
		return nil, nil, err
	}
	batch := make([]int, 1, q)
	batch[0] = first
	if q == 1 {
		return batch, nil, nil
	}
	m, sd := s.standardisation()
	cfg := s.gcfg
	h := s.gp.Hyper() // refitted ones with Config.FitEvery
	cfg.Lengthscale, cfg.SignalVariance, cfg.NoiseVariance = h.Lengthscale, h.SignalVariance, h.NoiseVariance
	cfg.Standardise = false
	cfg.Capacity = len(s.ys) + q
	scratch, err := gpucb.New(s.z, s.n, s.dim, cfg)
	if err != nil {
		return nil, nil, err
	}
	for j, i := range s.res.Queried {
		if err := scratch.Observe(i, (s.ys[j]-m)/sd); err != nil {
			return nil, nil, err
		}
	}
	for len(batch) < q {
		last := batch[len(batch)-1]
		if err := scratch.Observe(last, scratch.Mean(last)); err != nil {
			return nil, nil, fmt.Errorf("stand-in for pending row %d: %w", last, err)
		}
		next, err := scratch.Next()
		if err != nil {
			return nil, nil, err
		}
		batch = append(batch, next)
	}
	return batch, scratch, nil
}

// standardisation returns the mean m and deviation s by which the real GP standardises
// its outputs, as pkg/gpucb computes them: the sample mean and the sample standard
// deviation (divisor t − 1), s = 1 while t < 2 or when the answers are all equal; (0, 1)
// with RawOutputs.
func (s *session) standardisation() (m, sd float64) {
	if !s.gcfg.Standardise || len(s.ys) == 0 {
		return 0, 1
	}
	for _, y := range s.ys {
		m += y
	}
	m /= float64(len(s.ys))
	sd = 1
	if t := len(s.ys); t >= 2 {
		var ss float64
		for _, y := range s.ys {
			ss += (y - m) * (y - m)
		}
		if v := math.Sqrt(ss / float64(t-1)); v > 0 && !math.IsInf(v, 0) {
			sd = v
		}
	}
	return m, sd
}
