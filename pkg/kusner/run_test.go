package kusner

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/gptest"
	"github.com/privbo/privbo/pkg/dp/dptest"
	"gonum.org/v1/gonum/mat"
)

// bump is a smooth synthetic validation gain on [0, 1] with its maximum 0.9
// at x = 0.7.
func bump(x float64) float64 { return 0.9 * math.Exp(-(x-0.7)*(x-0.7)/(2*0.1*0.1)) }

// recorder is an Objective that records the candidates it is asked for.
type recorder struct {
	x     []float64
	f     func(x float64) float64
	noise float64 // standard deviation of added Gaussian noise
	rng   *rand.Rand
	calls []int
	vals  []float64
}

func newRecorder(x []float64, f func(float64) float64, noise float64, seed uint64) *recorder {
	return &recorder{x: x, f: f, noise: noise, rng: rand.New(rand.NewPCG(seed, 7))}
}

func (r *recorder) eval(_ context.Context, i int) (float64, error) {
	v := r.f(r.x[i])
	if r.noise > 0 {
		v += r.noise * r.rng.NormFloat64()
	}
	r.calls = append(r.calls, i)
	r.vals = append(r.vals, v)
	return v, nil
}

// The exponential mechanism's selection frequencies match the exact
// distribution Pr[i] ∝ exp(ε µ_i/(2Δu)), computed here independently.
// 10000 draws per case; chi-square false-failure rate ≤ 1e-6 per case.
func TestSelectIndexChiSquare(t *testing.T) {
	tests := []struct {
		name    string
		eps, du float64
		mu      []float64
		seed    uint64
	}{
		{"posterior-like", 1, 0.25, []float64{0.1, 0.5, 0.62, 0.7, 0.68, 0.3, -0.05, 0.55, 0.2, 0.66}, 1},
		{"equal", 3, 17, []float64{0.4, 0.4, 0.4, 0.4, 0.4}, 2},
		// Scores spread over many Δu: clamping to a narrow range would
		// change the distribution.
		{"wide", 2, 0.5, []float64{-1, -0.5, 0, 0.3, 0.6, 0.9}, 3},
		{"large ε", 100, 17.3, []float64{0.80, 0.85, 0.9, 0.88, 0.7}, 4},
	}
	const draws = 10000
	for _, tc := range tests {
		p := make([]float64, len(tc.mu))
		var sum float64
		for i, m := range tc.mu {
			p[i] = math.Exp(tc.eps * m / (2 * tc.du))
			sum += p[i]
		}
		for i := range p {
			p[i] /= sum
		}
		src := dptest.Source(tc.seed)
		counts := make([]int, len(tc.mu))
		for range draws {
			i, err := selectIndex(src, tc.eps, tc.du, tc.mu)
			if err != nil {
				t.Fatalf("%s: selectIndex: %v", tc.name, err)
			}
			counts[i]++
		}
		dptest.ChiSquareCheck(t, "selectIndex "+tc.name, counts, p)
	}
}

func TestSelectIndexErrors(t *testing.T) {
	if _, err := selectIndex(dptest.Source(1), 1, 1, nil); err == nil {
		t.Error("selectIndex(no candidates) succeeded, want error")
	}
	if _, err := selectIndex(nil, 1, 1, []float64{1, 2}); err == nil {
		t.Error("selectIndex(nil source) succeeded, want error")
	}
}

// refPosterior is a dense GP posterior (SE kernel, unit signal variance,
// zero prior mean) after observing ys at candidates obs, computed with
// gonum independently of gpucb.
func refPosterior(t *testing.T, x []float64, l, s2 float64, obs []int, ys []float64) (mu, va []float64) {
	t.Helper()
	k := func(a, b float64) float64 { return math.Exp(-(a - b) * (a - b) / (2 * l * l)) }
	n := len(x)
	mu, va = make([]float64, n), make([]float64, n)
	m := len(obs)
	if m == 0 {
		for i := range va {
			va[i] = 1
		}
		return mu, va
	}
	ch := gptest.Factor(t, m, func(i, j int) float64 { return k(x[obs[i]], x[obs[j]]) }, s2)
	alpha := mat.NewVecDense(m, nil)
	if err := ch.SolveVecTo(alpha, mat.NewVecDense(m, append([]float64(nil), ys...))); err != nil {
		t.Fatal(err)
	}
	kz := mat.NewVecDense(m, nil)
	w := mat.NewVecDense(m, nil)
	for z := range n {
		for j := range m {
			kz.SetVec(j, k(x[z], x[obs[j]]))
		}
		mu[z] = mat.Dot(kz, alpha)
		if err := ch.SolveVecTo(w, kz); err != nil {
			t.Fatal(err)
		}
		va[z] = math.Max(1-mat.Dot(kz, w), 0)
	}
	return mu, va
}

// Run's search is GP-UCB with the paper's β_t (Algorithms 1 and 2) or with
// δ' = SearchDelta (Algorithm 3): the candidates it evaluates are the
// argmaxes of µ_{t−1} + √β_t σ_{t−1} of a dense reference GP, step by step.
// In Algorithms 2 and 3 repeated candidates are not re-evaluated but are
// observed again.
func TestRunSearchMatchesReference(t *testing.T) {
	const n, T = 40, 25
	x := grid1(n)
	tests := []struct {
		name  string
		alg   Algorithm
		noise float64
	}{
		{"alg1", NoisyGP, 0.01},
		{"alg2", NoiseFree, 0},
		{"alg3", Lipschitz, 0},
	}
	for _, tc := range tests {
		cfg := validConfig(tc.alg)
		cfg.Candidates, cfg.N, cfg.Iterations, cfg.Lengthscale = x, n, T, 0.15
		s2 := NoiseFreeJitter
		if tc.alg == NoisyGP {
			cfg.NoiseVariance = 1e-4
			s2 = 1e-4
		}
		// A wiggly objective so the search moves around; σ = 0.01 noise for Alg. 1.
		f := func(x float64) float64 { return bump(x) + 0.2*math.Sin(9*x) }
		rec := newRecorder(x, f, tc.noise, 3)
		var seq []int // every candidate observed, including repeats
		var ys []float64
		obj := func(ctx context.Context, i int) (float64, error) {
			return rec.eval(ctx, i)
		}
		if _, err := Run(context.Background(), dptest.Source(1), cfg, obj, func(p Progress) {}); err != nil {
			t.Fatalf("%s: Run: %v", tc.name, err)
		}
		// Rebuild the observed sequence: repeats of Algorithms 2 and 3 reuse
		// the first value, so replay the reference search itself.
		byIndex := map[int]float64{}
		call := 0
		for step := 1; step <= T; step++ {
			mu, va := refPosterior(t, x, 0.15, s2, seq, ys)
			beta := BetaT(n, step, cfg.Delta)
			if tc.alg == Lipschitz {
				beta = BetaT(n, step, 2*SearchDelta) // 2 log(n t²π²/(6δ'))
			}
			best, bestA := 0, math.Inf(-1)
			acq := make([]float64, n)
			for i := range n {
				acq[i] = mu[i] + math.Sqrt(beta*va[i])
				if acq[i] > bestA {
					best, bestA = i, acq[i]
				}
			}
			var i int
			var v float64
			if prev, ok := byIndex[best]; ok && tc.alg != NoisyGP {
				i, v = best, prev
			} else {
				if call >= len(rec.calls) {
					t.Fatalf("%s: step %d: reference evaluates candidate %d, Run made only %d calls", tc.name, step, best, len(rec.calls))
				}
				i, v = rec.calls[call], rec.vals[call]
				call++
				// Accept a different index only on a numerical tie.
				if i != best && acq[i] < bestA-1e-9 {
					t.Fatalf("%s: step %d: Run evaluated candidate %d (acquisition %.12g), reference argmax %d (%.12g)",
						tc.name, step, i, acq[i], best, bestA)
				}
				if _, ok := byIndex[i]; ok && tc.alg != NoisyGP {
					t.Errorf("%s: step %d: candidate %d evaluated twice by a deterministic algorithm", tc.name, step, i)
				}
				byIndex[i] = v
			}
			seq, ys = append(seq, i), append(ys, v)
		}
		if tc.alg != NoisyGP && len(seq) == len(byIndex) {
			t.Errorf("%s: the search never repeated a candidate; the test should cover repeats", tc.name)
		}
		if call != len(rec.calls) {
			t.Errorf("%s: Run made %d objective calls, reference %d", tc.name, len(rec.calls), call)
		}
	}
}

// Run end to end on a smooth objective over a 1-D grid of 50 points with tiny
// noise: for large ε the released λ̃ is near the maximiser and ṽ near the
// maximum.
func TestRunFindsMaximum(t *testing.T) {
	const n = 50
	x := grid1(n)
	fmax := math.Inf(-1)
	for _, xi := range x {
		fmax = math.Max(fmax, bump(xi))
	}
	for _, alg := range []Algorithm{NoisyGP, NoiseFree, Lipschitz} {
		cfg := validConfig(alg)
		cfg.Candidates, cfg.N, cfg.Iterations = x, n, 20
		cfg.Epsilon = 1e4
		noise := 0.0
		if alg == NoisyGP {
			cfg.NoiseVariance, noise = 1e-4, 1e-3
		}
		rec := newRecorder(x, bump, noise, 11)
		res, err := Run(context.Background(), dptest.Source(5), cfg, rec.eval, nil)
		if err != nil {
			t.Fatalf("%v: Run: %v", alg, err)
		}
		if res.HasIndex != (alg != Lipschitz) {
			t.Errorf("%v: HasIndex = %v", alg, res.HasIndex)
		}
		// With ε = 1e4 and Δu ≈ 17, candidates with µ_T 0.3 below the
		// maximum (|x − 0.7| > 0.1) have relative probability < e^{-80}.
		if res.HasIndex && math.Abs(x[res.Index]-0.7) > 0.1 {
			t.Errorf("%v: released λ̃ = x[%d] = %.3f, want within 0.1 of the maximiser 0.7", alg, res.Index, x[res.Index])
		}
		// Laplace scale ≲ 30/1e4; the search reaches the top of the bump.
		if math.Abs(res.Value-fmax) > 0.05 {
			t.Errorf("%v: released value = %.4f, want within 0.05 of max f = %.4f (scale %g)", alg, res.Value, fmax, res.Constants.LaplaceScale)
		}
		if e, d := cfg.Cost(); res.Epsilon != e || res.Delta != d || res.Guarantee != cfg.Guarantee() || res.Algorithm != alg {
			t.Errorf("%v: result guarantee (%g, %g) %q, want Cost (%g, %g) and Guarantee()", alg, res.Epsilon, res.Delta, res.Guarantee, e, d)
		}
	}
}

// The released value is the right statistic plus Laplace noise of the
// documented scale: Algorithm 1 and 3 release max_t v_t, Algorithm 2 the last
// observation f_V(λ_T). With a deterministic objective the search is fixed,
// so ṽ − statistic over 300 runs is a Laplace sample of scale b = Δ/ε:
// E|Z| = b and sd |Z| = b, E Z = 0 and sd Z = √2 b. Both means are checked
// at 4.42 standard errors (two-sided normal tail 1e-5): false-failure rate
// ≤ 2e-5 per case. Smaller ε gives proportionally larger noise.
func TestRunValueNoise(t *testing.T) {
	const n, runs = 30, 300
	x := grid1(n)
	tests := []struct {
		alg Algorithm
		T   int
		eps float64
	}{
		{NoisyGP, 8, 0.5},
		{NoisyGP, 8, 5},
		{NoiseFree, 5, 1},
		{Lipschitz, 8, 2},
	}
	for k, tc := range tests {
		T := tc.T
		cfg := validConfig(tc.alg)
		cfg.Candidates, cfg.N, cfg.Iterations, cfg.Epsilon = x, n, T, tc.eps
		if tc.alg == NoisyGP {
			cfg.GammaT = 4 // skip the greedy bound in every run
		}
		rec := newRecorder(x, bump, 0, 1)
		src := dptest.Source(100 + uint64(k))
		var sumAbs, sum, b float64
		var stat float64
		for r := range runs {
			rec.calls, rec.vals = rec.calls[:0], rec.vals[:0]
			res, err := Run(context.Background(), src, cfg, rec.eval, nil)
			if err != nil {
				t.Fatal(err)
			}
			switch tc.alg {
			case NoiseFree:
				// f_V(λ_T) is the last evaluation unless the last step
				// repeated a candidate (cached): make sure it did not.
				if len(rec.vals) != T {
					t.Fatalf("%v: search repeated a candidate (calls %v); choose a larger grid", tc.alg, rec.calls)
				}
				stat = rec.vals[T-1]
			default:
				stat = math.Inf(-1)
				for _, v := range rec.vals {
					stat = math.Max(stat, v)
				}
			}
			if r == 0 {
				b = res.Constants.LaplaceScale
				if want := res.Constants.LaplaceSensitivity / tc.eps; b != want {
					t.Errorf("%v: LaplaceScale = %g, want Δ/ε = %g", tc.alg, b, want)
				}
			}
			z := res.Value - stat
			sum += z
			sumAbs += math.Abs(z)
		}
		const zcrit = 4.41717
		meanAbs, mean := sumAbs/runs, sum/runs
		if se := b / math.Sqrt(runs); math.Abs(meanAbs-b) > zcrit*se {
			t.Errorf("%v ε=%g: mean |ṽ − statistic| = %g, want Laplace scale %g ± %g", tc.alg, tc.eps, meanAbs, b, zcrit*se)
		}
		if se := math.Sqrt2 * b / math.Sqrt(runs); math.Abs(mean) > zcrit*se {
			t.Errorf("%v ε=%g: mean ṽ − statistic = %g, want 0 ± %g", tc.alg, tc.eps, mean, zcrit*se)
		}
	}
}

// The λ̃ released by Run follows Pr[λ] ∝ exp(ε µ_T(λ)/(2Δu)) with µ_T the
// posterior mean after the search (from a dense reference GP) and
// Δu = Constants.ExpSensitivity. Algorithm 2 with a deterministic objective
// makes the search, and so µ_T, the same in every run. 4000 runs; chi-square
// false-failure rate ≤ 1e-6.
func TestRunSelectionDistribution(t *testing.T) {
	const n, T, runs = 12, 4, 4000
	x := grid1(n)
	cfg := validConfig(NoiseFree)
	cfg.Candidates, cfg.N, cfg.Iterations, cfg.Lengthscale, cfg.Epsilon = x, n, T, 0.2, 150
	f := func(x float64) float64 { return 0.3 + 0.6*x }
	rec := newRecorder(x, f, 0, 1)
	src := dptest.Source(2024)
	counts := make([]int, n)
	var du float64
	for r := range runs {
		rec.calls, rec.vals = rec.calls[:0], rec.vals[:0]
		res, err := Run(context.Background(), src, cfg, rec.eval, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.calls) != T {
			t.Fatalf("search repeated a candidate (calls %v): choose a longer grid", rec.calls)
		}
		counts[res.Index]++
		du = res.Constants.ExpSensitivity
		if r == 0 {
			if want := 2*math.Sqrt(BetaT(n, T+1, cfg.Delta)) + C(cfg.K1, n, cfg.Delta, NoisyGP); !near(du, want, 1e-14) {
				t.Errorf("ExpSensitivity = %.17g, want 2√β_{T+1} + c = %.17g", du, want)
			}
		}
	}
	mu, _ := refPosterior(t, x, 0.2, NoiseFreeJitter, rec.calls, rec.vals)
	p := make([]float64, n)
	var sum float64
	for i, m := range mu {
		p[i] = math.Exp(cfg.Epsilon * m / (2 * du))
		sum += p[i]
	}
	for i := range p {
		p[i] /= sum
	}
	dptest.ChiSquareCheck(t, "Run λ̃", counts, p)
}

// For Algorithm 2 the statistic really is the last observation, not the
// maximum: choose an objective where GP-UCB's last step is not the best.
func TestRunNoiseFreeReleasesLast(t *testing.T) {
	const n = 20
	x := grid1(n)
	cfg := validConfig(NoiseFree)
	cfg.Candidates, cfg.N, cfg.Iterations, cfg.Epsilon = x, n, 6, 1e6
	rec := newRecorder(x, func(x float64) float64 { return x }, 0, 1)
	res, err := Run(context.Background(), dptest.Source(9), cfg, rec.eval, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Reconstruct the last observation: the last call, unless the last step
	// was a repeat, which this objective (exploring with σ = 1 prior) avoids
	// for 6 steps on 20 points; check that.
	if len(rec.calls) != 6 {
		t.Fatalf("objective called %d times, want 6 distinct evaluations", len(rec.calls))
	}
	last, best := rec.vals[5], 0.0
	for _, v := range rec.vals {
		best = math.Max(best, v)
	}
	if last == best {
		t.Fatalf("test objective: last observation %g is the maximum; choose another", last)
	}
	// Scale ≈ 5/1e6.
	if math.Abs(res.Value-last) > 1e-3 {
		t.Errorf("Algorithm 2 released %g, want f_V(λ_T) = %g (not max %g)", res.Value, last, best)
	}
}

// Progress events hold step counts and fixed messages: they are the same
// for two different objectives.
func TestRunProgressDataIndependent(t *testing.T) {
	const n, T = 25, 7
	x := grid1(n)
	for _, alg := range []Algorithm{NoisyGP, NoiseFree, Lipschitz} {
		cfg := validConfig(alg)
		cfg.Candidates, cfg.N, cfg.Iterations = x, n, T
		var events [2][]Progress
		for k, f := range []func(float64) float64{bump, func(x float64) float64 { return 1 - x*x }} {
			rec := newRecorder(x, f, 0, 1)
			if _, err := Run(context.Background(), dptest.Source(1), cfg, rec.eval, func(p Progress) {
				events[k] = append(events[k], p)
			}); err != nil {
				t.Fatal(err)
			}
		}
		if !reflect.DeepEqual(events[0], events[1]) {
			t.Errorf("%v: progress differs between objectives:\n%v\n%v", alg, events[0], events[1])
		}
		if len(events[0]) != cfg.Steps() {
			t.Fatalf("%v: %d progress events, want Steps() = %d", alg, len(events[0]), cfg.Steps())
		}
		for i, p := range events[0] {
			if p.Step != i+1 || p.Total != T+1 {
				t.Errorf("%v: event %d = %+v, want Step %d of %d", alg, i, p, i+1, T+1)
			}
		}
	}
}

// Algorithms 2 and 3 evaluate each candidate at most once even when the
// search runs longer than the grid is large.
func TestRunCachesDeterministicObjective(t *testing.T) {
	const n = 6
	x := grid1(n)
	for _, alg := range []Algorithm{NoiseFree, Lipschitz} {
		cfg := validConfig(alg)
		cfg.Candidates, cfg.N, cfg.Iterations = x, n, 30
		rec := newRecorder(x, bump, 0, 1)
		if _, err := Run(context.Background(), dptest.Source(1), cfg, rec.eval, nil); err != nil {
			t.Fatalf("%v: Run: %v", alg, err)
		}
		seen := map[int]bool{}
		for _, i := range rec.calls {
			if seen[i] {
				t.Errorf("%v: candidate %d evaluated twice (calls %v)", alg, i, rec.calls)
			}
			seen[i] = true
		}
	}
	// Algorithm 1 re-evaluates: 30 iterations on 6 points means 30 calls.
	cfg := validConfig(NoisyGP)
	cfg.Candidates, cfg.N, cfg.Iterations = x, n, 30
	rec := newRecorder(x, bump, 0.01, 1)
	if _, err := Run(context.Background(), dptest.Source(1), cfg, rec.eval, nil); err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 30 {
		t.Errorf("Algorithm 1 made %d objective calls in 30 iterations, want 30", len(rec.calls))
	}
}

func TestRunDeterministicGivenSource(t *testing.T) {
	cfg := validConfig(NoisyGP)
	cfg.Candidates, cfg.N, cfg.Iterations = grid1(30), 30, 10
	var got [2]Result
	for k := range got {
		rec := newRecorder(grid1(30), bump, 0.01, 4)
		var err error
		if got[k], err = Run(context.Background(), dptest.Source(77), cfg, rec.eval, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got[0], got[1]) {
		t.Errorf("Run with equal sources and objectives differs: %+v vs %+v", got[0], got[1])
	}
}

func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	good := validConfig(NoisyGP)
	calls := 0
	counting := func(context.Context, int) (float64, error) { calls++; return 0.5, nil }

	bad := good
	bad.Epsilon = 0
	if _, err := Run(ctx, dptest.Source(1), bad, counting, nil); err == nil || calls != 0 {
		t.Errorf("Run(invalid config) = %v after %d objective calls, want an error and no call", err, calls)
	}
	if _, err := Run(ctx, nil, good, counting, nil); err == nil || calls != 0 {
		t.Errorf("Run(nil source) = %v after %d calls, want an error and no call", err, calls)
	}
	if _, err := Run(ctx, dptest.Source(1), good, nil, nil); err == nil {
		t.Error("Run(nil objective) succeeded, want error")
	}

	boom := errors.New("learner crashed")
	_, err := Run(ctx, dptest.Source(1), good, func(context.Context, int) (float64, error) { return 0, boom }, nil)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "kusner: ") {
		t.Errorf("Run(failing objective) = %v, want a kusner error wrapping %v", err, boom)
	}

	_, err = Run(ctx, dptest.Source(1), good, func(context.Context, int) (float64, error) { return math.NaN(), nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "non-finite") {
		t.Errorf("Run(NaN objective) = %v, want a non-finite error", err)
	}

	// Cancelled after the third evaluation: no fourth call.
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	calls = 0
	_, err = Run(cctx, dptest.Source(1), good, func(context.Context, int) (float64, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return 0.5, nil
	}, nil)
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Errorf("Run(cancelled) = %v after %d calls, want context.Canceled after 3", err, calls)
	}
}

// A failing randomness source aborts the release with an error.
func TestRunSourceFailure(t *testing.T) {
	cfg := validConfig(Lipschitz)
	_, err := Run(context.Background(), dptest.FromReader(failingReader{}), cfg,
		func(context.Context, int) (float64, error) { return 0.5, nil }, nil)
	if err == nil || !strings.Contains(err.Error(), "value release") {
		t.Errorf("Run(failing source) = %v, want a value-release error", err)
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("no entropy") }
