package modeler

import "fmt"

// chooseBatch returns the next q rows, GP-BUCB style (package documentation): each
// chosen row but the last enters the posterior as a fantasy (gpucb.Posterior.Fantasize:
// an observation equal to its posterior mean, under the real answers' standardisation)
// before the next is chosen by the acquisition rule; the fantasies are dropped before it
// returns, so the posterior holds the real answers alone. A fantasy has the noise of
// the answer it stands in for: that of the clip range the round asks for (Config.Clip,
// noiseFactor; 1, the prior's noise variance, for the public range), so that it shrinks
// the variance as the real answer will.
func (s *session) chooseBatch(q int) ([]int, error) {
	batch, err := s.fantasizeBatch(q)
	s.post.DropFantasies()
	return batch, err
}

// fantasizeBatch is chooseBatch leaving the fantasies of the batch's first q − 1 rows
// pending (the caller drops them).
func (s *session) fantasizeBatch(q int) ([]int, error) {
	if q < 1 {
		panic(fmt.Sprintf("modeler: chooseBatch(%d)", q))
	}
	batch := make([]int, 0, q)
	f := s.noiseFactor(s.cfg.Clip) // the clip range every query of the loop asks for
	for {
		next, err := s.acq.Next(s.post)
		if err != nil {
			return nil, err
		}
		batch = append(batch, next)
		if len(batch) == q {
			return batch, nil
		}
		if err := s.post.FantasizeNoise(next, f); err != nil {
			return nil, fmt.Errorf("fantasy for pending row %d: %w", next, err)
		}
	}
}
