package kusner

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/gpucb"
)

// Progress is one progress report of Run. It goes to the modeler, so it
// holds step counts and a fixed message only: nothing that depends on the
// validation set (no f_V value, not the candidate chosen).
type Progress struct {
	// Step counts from 1 to Total: 1 … T are the iterations of the search,
	// T + 1 is the release.
	Step, Total int
	Message     string
}

// Result is what Run releases. Every field is private (Index, Value) or
// public (the rest).
type Result struct {
	Algorithm Algorithm
	// Index is the released candidate λ̃ (Algorithms 1 and 2; HasIndex).
	// Algorithm 3 releases no hyperparameter.
	Index    int
	HasIndex bool
	// Value is the released validation gain: ṽ (Algorithm 1), f̃
	// (Algorithm 2) or f̃_L (Algorithm 3).
	Value float64
	// Epsilon and Delta are the total guarantee of this result (Config.Cost).
	Epsilon, Delta float64
	// Guarantee states it in words, with its assumptions (Config.Guarantee).
	Guarantee string
	// Constants are the public constants used.
	Constants Constants
}

// Run searches the grid with GP-UCB for cfg.Iterations steps, evaluating f,
// and releases the private result of cfg.Algorithm (see the package
// documentation), drawing all noise from src (dp.CryptoSource in
// production). progress, if not nil, is called after each iteration and
// before the release, on Run's goroutine.
//
// Run validates cfg and builds the mechanisms before it calls f, so a bad
// Config fails without touching data. It stops with ctx's error (wrapped)
// when ctx is done before an evaluation; f receives ctx. Errors after the
// first evaluation are for the curator's operator (see the package
// documentation) and nothing is released.
func Run(ctx context.Context, src *dp.Source, cfg Config, f Objective, progress func(Progress)) (Result, error) {
	if src == nil {
		return Result{}, errors.New("kusner: nil randomness source (use dp.CryptoSource)")
	}
	if f == nil {
		return Result{}, errors.New("kusner: nil objective")
	}
	k, lap, err := cfg.plan()
	if err != nil {
		return Result{}, err
	}
	if progress == nil {
		progress = func(Progress) {}
	}
	delta := cfg.Delta / 2 // gpucb.Beta(n, t, δ/2) = BetaT(n, t, δ)
	if cfg.Algorithm == Lipschitz {
		delta = SearchDelta
	}
	T := cfg.Iterations
	gp, err := gpucb.New(cfg.Candidates, cfg.N, cfg.Dim, gpucb.Config{
		Kernel:         gpucb.SquaredExponential,
		Lengthscale:    k.Lengthscale,
		SignalVariance: 1, // k2(λ, λ) = 1
		NoiseVariance:  k.NoiseVariance,
		Delta:          delta,
		Capacity:       T,
	})
	if err != nil {
		return Result{}, fmt.Errorf("kusner: %w", err)
	}

	// Deterministic objectives (Algorithms 2 and 3) are evaluated once per
	// candidate.
	var seen map[int]float64
	if cfg.Algorithm != NoisyGP {
		seen = make(map[int]float64)
	}
	best, last := math.Inf(-1), 0.0
	total := cfg.Steps()
	for t := 1; t <= T; t++ {
		if err := ctx.Err(); err != nil {
			return Result{}, fmt.Errorf("kusner: stopped before iteration %d of %d: %w", t, T, err)
		}
		i, err := gp.Next()
		if err != nil {
			return Result{}, fmt.Errorf("kusner: iteration %d: %w", t, err)
		}
		v, ok := seen[i]
		if !ok {
			v, err = f(ctx, i)
			if err != nil {
				return Result{}, fmt.Errorf("kusner: evaluating the objective at iteration %d: %w", t, err)
			}
			if !finite(v) {
				return Result{}, fmt.Errorf("kusner: the objective returned a non-finite value at iteration %d", t)
			}
			if seen != nil {
				seen[i] = v
			}
		}
		if gp.Observe(i, v) != nil {
			// gpucb's message names the candidate, which depends on V.
			return Result{}, fmt.Errorf("kusner: iteration %d: the GP update is numerically singular (noise variance too small)", t)
		}
		best, last = math.Max(best, v), v
		progress(Progress{Step: t, Total: total, Message: fmt.Sprintf("iteration %d of %d", t, T)})
	}
	progress(Progress{Step: total, Total: total, Message: "releasing the private result"})

	eps, dlt := cfg.Cost()
	res := Result{
		Algorithm: cfg.Algorithm,
		Epsilon:   eps,
		Delta:     dlt,
		Guarantee: cfg.Guarantee(),
		Constants: k,
	}
	value := best // Algorithms 1 and 3: max_t v_t
	if cfg.Algorithm != Lipschitz {
		mu := make([]float64, cfg.N)
		for i := range mu {
			mu[i] = gp.Mean(i)
		}
		idx, err := selectIndex(src, cfg.Epsilon, k.ExpSensitivity, mu)
		if err != nil {
			return Result{}, fmt.Errorf("kusner: hyperparameter release: %w", err)
		}
		res.Index, res.HasIndex = idx, true
		if cfg.Algorithm == NoiseFree {
			value = last // f_V(λ_T)
		}
	}
	res.Value, err = lap.Release(src, value)
	if err != nil {
		return Result{}, fmt.Errorf("kusner: value release: %w", err)
	}
	return res, nil
}

// selectIndex draws i with Pr[i] ∝ exp(ε mu_i / (2Δu)), the exponential
// mechanism on the posterior mean. The score range handed to dp is
// [min mu − Δu, max mu + Δu], which contains every score, so dp's clamping
// never changes one (see the package documentation).
func selectIndex(src *dp.Source, epsilon, du float64, mu []float64) (int, error) {
	if len(mu) == 0 {
		return 0, errors.New("kusner: no candidates to select from")
	}
	lo, hi := mu[0], mu[0]
	for _, m := range mu[1:] {
		lo, hi = math.Min(lo, m), math.Max(hi, m)
	}
	em, err := dp.NewExponential(epsilon, du, lo-du, hi+du)
	if err != nil {
		return 0, err
	}
	return em.Select(src, mu)
}
