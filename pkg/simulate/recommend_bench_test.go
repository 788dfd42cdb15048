package simulate

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
)

// recTask is a task of BenchmarkRecommend: a shipped data file, its public schema and
// target, optionally a fixed subsample of its rows.
type recTask struct {
	file, schema, target string
	rows                 int // 0: all
}

var recTasks = map[string]recTask{
	"diabetes":    {"diabetes.csv", "diabetes.schema.csv", "progression", 0},
	"diabetes203": {"diabetes.csv", "diabetes.schema.csv", "progression", 203},
	"breast":      {"breast_cancer_labelled.csv", "breast_cancer_labelled.schema.csv", "worst_area", 0},
	// s5 (log serum triglycerides, schema range [3, 7]) as the target of the other
	// diabetes columns: a narrow spread (sd 0.52) against the noise (sd 5.7 at ε_out = 1).
	"s5": {"diabetes.csv", "diabetes.schema.csv", "s5", 0},
}

// loadRecTask loads a task's data (a subsample drawn once with a fixed seed, written to
// dir, when the task asks for fewer rows).
func loadRecTask(b *testing.B, name, dir string) *dataset.Dataset {
	tk, ok := recTasks[name]
	if !ok {
		b.Fatalf("PRIVBO_REC_TASK=%q: want diabetes, diabetes203, breast or s5", name)
	}
	path := filepath.Join("../../examples/data", tk.file)
	if tk.rows > 0 {
		raw, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
		body := lines[1:]
		rand.New(rand.NewPCG(28, 3)).Shuffle(len(body), func(i, j int) { body[i], body[j] = body[j], body[i] })
		path = filepath.Join(dir, name+".csv")
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriter(f)
		fmt.Fprintln(w, lines[0])
		for _, l := range body[:tk.rows] {
			fmt.Fprintln(w, l)
		}
		if err := w.Flush(); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
	sc, err := dataset.ParseScaling("schema:../../examples/data/" + tk.schema)
	if err != nil {
		b.Fatal(err)
	}
	ds, err := dataset.LoadCSV(path, dataset.Options{Target: tk.target, Scaling: sc})
	if err != nil {
		b.Fatal(err)
	}
	if ds.TargetRange == nil {
		b.Fatalf("task %s: the schema gives the target %s no range", name, tk.target)
	}
	return ds
}

// capture is a Local that keeps the projection the study received, for rules
// evaluated on the same run after it.
type capture struct {
	*Local
	proj *modeler.Projection
}

func (c *capture) ReleaseProjection(ctx context.Context, req modeler.ProjectionRequest) (*modeler.Projection, error) {
	p, err := c.Local.ReleaseProjection(ctx, req)
	c.proj = p
	return p, err
}

// recRun is what one run leaves for the rules: the projection, the GP's settings and the
// answers.
type recRun struct {
	z              []float64
	n, dim         int
	res            *modeler.Result
	lower, upper   float64
	answerVariance float64
}

// posterior rebuilds a GP over the run's Z conditioned on its answers (noise factor 1):
// with the study's own prior (standardised, the NoiseRule variances) unless raw, then
// the public-range prior with signal sd (U − L)/sfDiv centred on the range's midpoint.
func (r *recRun) posterior(raw bool, sfDiv float64) (*gpucb.Posterior, float64) {
	return r.posteriorLS(raw, sfDiv, 1)
}

// posteriorLS is posterior with the study's lengthscale times lsMul.
func (r *recRun) posteriorLS(raw bool, sfDiv, lsMul float64) (*gpucb.Posterior, float64) {
	cfg := gpucb.PosteriorConfig{Kernel: gpucb.SquaredExponential, Lengthscale: lsMul * r.res.Lengthscale,
		SignalVariance: r.res.SignalVariance, NoiseVariance: r.res.NoiseVariance, Standardise: true,
		InputNoiseVariance: r.res.InputNoiseVariance, Workers: 1, Capacity: len(r.res.Queried)}
	off := 0.0
	if raw {
		sf := (r.upper - r.lower) / sfDiv
		cfg.Standardise, cfg.SignalVariance, cfg.NoiseVariance = false, sf*sf, r.answerVariance
		off = (r.upper + r.lower) / 2
	}
	p, err := gpucb.NewPosterior(r.z, r.n, r.dim, cfg)
	if err != nil {
		panic(err)
	}
	for j, i := range r.res.Queried {
		if err := p.ObserveNoise(i, r.res.Values[j]-off, 1); err != nil {
			panic(err)
		}
	}
	return p, off
}

// laplaceEM reweights p's answers as robustRecommend does, with |r| floored at floor·b.
func (r *recRun) laplaceEM(p *gpucb.Posterior, floor float64) {
	idx, ys := p.Observed()
	b := math.Sqrt(r.answerVariance / 2)
	nf := make([]float64, len(idx))
	for range 10 {
		for j, i := range idx {
			nf[j] = b * max(math.Abs(ys[j]-p.Mean(i)), floor*b) / (2 * b * b)
		}
		if err := p.SetNoiseFactors(nf); err != nil {
			panic(err)
		}
	}
}

// looBest is the queried row whose posterior mean given the other rows' answers (its
// own left out) is highest.
func (r *recRun) looBest(raw bool) int {
	best, bv := -1, math.Inf(-1)
	full := r.res
	for _, i := range slices.Compact(slices.Sorted(slices.Values(full.Queried))) {
		var q []int
		var v []float64
		for j, k := range full.Queried {
			if k != i {
				q, v = append(q, k), append(v, full.Values[j])
			}
		}
		if len(q) == 0 {
			continue
		}
		sub := *r
		res := *full
		res.Queried, res.Values = q, v
		sub.res = &res
		p, off := sub.posterior(raw, 4)
		if m := p.Mean(i) + off; best < 0 || m > bv {
			best, bv = i, m
		}
	}
	return best
}

// emSignal is the shipped rule (Laplace EM, floor b/2, standardised answers) with the
// prior's signal sd (U − L)/sfDiv instead of (U − L)/4.
func (r *recRun) emSignal(sfDiv float64) int {
	sub := *r
	res := *r.res
	res.NoiseVariance *= sfDiv * sfDiv / 16
	sub.res = &res
	p, _ := sub.posterior(false, 4)
	sub.laplaceEM(p, 0.5)
	return sub.argmaxQueried(p, 0)
}

// argmaxQueried is the queried row of highest µ − κσ.
func (r *recRun) argmaxQueried(p *gpucb.Posterior, kappa float64) int {
	best, bv := -1, math.Inf(-1)
	for _, i := range r.res.Queried {
		if v := p.Mean(i) - kappa*math.Sqrt(p.Variance(i)); best < 0 || v > bv {
			best, bv = i, v
		}
	}
	return best
}

// neighbours is the number of other queried rows within one lengthscale of row i in Z.
func (r *recRun) neighbours(i int) int {
	k, l2 := 0, r.res.Lengthscale*r.res.Lengthscale
	seen := map[int]bool{i: true}
	for _, j := range r.res.Queried {
		if seen[j] {
			continue
		}
		seen[j] = true
		var d float64
		for c := range r.dim {
			x := r.z[i*r.dim+c] - r.z[j*r.dim+c]
			d += x * x
		}
		if d <= l2 {
			k++
		}
	}
	return k
}

// recRules are the recommendation rules BenchmarkRecommend compares on the same runs.
var recRules = []struct {
	name string
	rule func(r *recRun) int
}{
	{"shipped (Laplace EM, floor b/2)", func(r *recRun) int { return r.res.Recommended }},
	{"Gaussian, standardised", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		return r.argmaxQueried(p, 0)
	}},
	{"Laplace EM, floor 2b", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		r.laplaceEM(p, 2)
		return r.argmaxQueried(p, 0)
	}},
	{"Gaussian, standardised, µ − σ", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		return r.argmaxQueried(p, 1)
	}},
	{"Gaussian, midpoint, s_f = w/4", func(r *recRun) int {
		p, _ := r.posterior(true, 4)
		return r.argmaxQueried(p, 0)
	}},
	{"Gaussian, midpoint, s_f = w/4, µ − σ", func(r *recRun) int {
		p, _ := r.posterior(true, 4)
		return r.argmaxQueried(p, 1)
	}},
	{"Gaussian, midpoint, s_f = w/4, µ − 2σ", func(r *recRun) int {
		p, _ := r.posterior(true, 4)
		return r.argmaxQueried(p, 2)
	}},
	{"Gaussian, midpoint, s_f = w/8", func(r *recRun) int {
		p, _ := r.posterior(true, 8)
		return r.argmaxQueried(p, 0)
	}},
	{"Laplace EM floor b/2, midpoint, s_f = w/4", func(r *recRun) int {
		p, _ := r.posterior(true, 4)
		r.laplaceEM(p, 0.5)
		return r.argmaxQueried(p, 0)
	}},
	{"Gaussian, standardised, all rows", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		i, _ := p.ArgmaxUpper(0, false)
		return i
	}},
	{"Gaussian, midpoint, s_f = w/4, all rows", func(r *recRun) int {
		p, _ := r.posterior(true, 4)
		i, _ := p.ArgmaxUpper(0, false)
		return i
	}},
	{"Gaussian, standardised, leave own answer out", func(r *recRun) int { return r.looBest(false) }},
	{"Gaussian, midpoint, leave own answer out", func(r *recRun) int { return r.looBest(true) }},
	{"Gaussian, standardised, lengthscale × 2", func(r *recRun) int {
		p, _ := r.posteriorLS(false, 4, 2)
		return r.argmaxQueried(p, 0)
	}},
	{"Gaussian, standardised, lengthscale × 0.5", func(r *recRun) int {
		p, _ := r.posteriorLS(false, 4, 0.5)
		return r.argmaxQueried(p, 0)
	}},
	{"Laplace EM floor b/2, lengthscale × 2", func(r *recRun) int {
		p, _ := r.posteriorLS(false, 4, 2)
		r.laplaceEM(p, 0.5)
		return r.argmaxQueried(p, 0)
	}},
	{"Laplace EM floor b/2, lengthscale × 2, all rows", func(r *recRun) int {
		p, _ := r.posteriorLS(false, 4, 2)
		r.laplaceEM(p, 0.5)
		i, _ := p.ArgmaxUpper(0, false)
		return i
	}},
	{"Laplace EM floor b", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		r.laplaceEM(p, 1)
		return r.argmaxQueried(p, 0)
	}},
	{"Laplace EM floor b/2, s_f = w/2", func(r *recRun) int { return r.emSignal(2) }},
	{"Laplace EM floor b/2, s_f = w/8", func(r *recRun) int { return r.emSignal(8) }},
	{"Laplace EM floor b/4", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		r.laplaceEM(p, 0.25)
		return r.argmaxQueried(p, 0)
	}},
	{"Gaussian, standardised, ≥ 1 neighbour", func(r *recRun) int {
		p, _ := r.posterior(false, 4)
		best, bv := -1, math.Inf(-1)
		for _, i := range r.res.Queried {
			if v := p.Mean(i); r.neighbours(i) > 0 && (best < 0 || v > bv) {
				best, bv = i, v
			}
		}
		if best < 0 {
			return r.argmaxQueried(p, 0)
		}
		return best
	}},
}

// BenchmarkRecommend measures the row a study recommends, by the TRUE target, on shipped
// data with the public schema (docs/EXPERIMENTS.md, "A recommendation worth acting on"):
// pkg/modeler's Run with its defaults (modeler.NewConfig) against an in-process
// pkg/curator with its defaults — Laplace answers at ε_out on the schema's target range,
// the Gaussian projection of the default study (ε = 1, the curator's choice of r, δ =
// 2e-7: the share a budget of ε = 10, δ = 1e-6 gives) — a new curator (projection and
// answer noise) per run and a uniformly random first row. Every rule of recRules is
// judged on the same runs: the recommended row's median percentile (the share of rows
// whose target is no higher) with its 95% CI, the share of runs recommending a row below
// the median row, and the share of runs with a top-1% row among those queried.
//
// Settings, from the environment (defaults in brackets):
//
//	PRIVBO_REC_TASK     diabetes, diabetes203 (a fixed 203-row subsample), breast
//	                    (worst_area) or s5 [diabetes]
//	PRIVBO_REC_T        iterations T [40]
//	PRIVBO_REC_RUNS     runs [200]
//	PRIVBO_REC_EPSILON  ε_out of each answer [1]
//	PRIVBO_REC_WORKERS  concurrent runs [1]
//	PRIVBO_REC_SEED     seed of the first rows [1]
//	PRIVBO_REC_PROJECTION  default (the curator's default study) or demo (the demo's
//	                    r = 5, ε = e², δ = 1e-4) [default]
//
// go test -run '^$' -bench Recommend -benchtime 1x -v ./pkg/simulate
func BenchmarkRecommend(b *testing.B) {
	if testing.Short() {
		b.Skip("a measurement, not a test")
	}
	task := cmp.Or(os.Getenv("PRIVBO_REC_TASK"), "diabetes")
	iters := envInt(b, "PRIVBO_REC_T", 40)
	runs := envInt(b, "PRIVBO_REC_RUNS", 200)
	workers := envInt(b, "PRIVBO_REC_WORKERS", 1)
	seed := uint64(envInt(b, "PRIVBO_REC_SEED", 1))
	eps := 1.0
	if v := os.Getenv("PRIVBO_REC_EPSILON"); v != "" {
		var err error
		if eps, err = strconv.ParseFloat(v, 64); err != nil || !(eps > 0) {
			b.Fatalf("PRIVBO_REC_EPSILON=%q: want ε > 0", v)
		}
	}
	demoProjection := false
	switch v := os.Getenv("PRIVBO_REC_PROJECTION"); v {
	case "", "default":
	case "demo":
		demoProjection = true
	default:
		b.Fatalf("PRIVBO_REC_PROJECTION=%q: want default or demo", v)
	}
	for b.Loop() {
		state := b.TempDir()
		ds := loadRecTask(b, task, state)
		lo, hi := ds.TargetRange.Lower, ds.TargetRange.Upper
		thr := TopOnePercentThreshold(ds.Y)
		med := medianOf(ds.Y)
		pct := func(i int) float64 {
			k := 0
			for _, v := range ds.Y {
				if v <= ds.Y[i] {
					k++
				}
			}
			return float64(k) / float64(ds.N)
		}
		store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
			PerIdentity: ledger.Cost{Epsilon: 1e12, Delta: 0.999}, Dataset: ledger.Cost{Epsilon: 1e12, Delta: 0.999}})
		if err != nil {
			b.Fatal(err)
		}
		type outcome struct {
			hit                bool
			rows               []int // per rule
			queriedPct         float64
			nb                 int     // answered neighbours of the shipped rule's row
			ans, mean, truth   float64 // its answer, posterior mean and true value
			r                  int
			noiseSD, projNoise float64
		}
		out, ferr := forRuns(runs, workers, func(run int) (outcome, error) {
			d := *ds
			d.Name = fmt.Sprintf("%s-%d", task, run)
			cur, err := curator.New(curator.Config{Dataset: &d, Ledger: store, StateDir: filepath.Join(state, strconv.Itoa(run)), Logger: zap.NewNop(),
				Output: curator.OutputPrivacy{Mechanism: answer.Default, Epsilon: eps, Lower: lo, Upper: hi}, StudyDelta: 2e-7})
			if err != nil {
				return outcome{}, err
			}
			c := &capture{Local: &Local{Curator: cur, Identity: "vendor"}}
			cfg := modeler.NewConfig()
			cfg.Iterations, cfg.Workers = iters, 1
			cfg.InitialIndex = rand.New(rand.NewPCG(seed, uint64(run))).IntN(ds.N)
			if demoProjection {
				cfg.R, cfg.Epsilon, cfg.Delta = 5, math.Exp(2), 1e-4
			}
			res, err := modeler.Run(context.Background(), c, cfg)
			if err != nil {
				return outcome{}, err
			}
			rr := &recRun{z: c.proj.Z, n: c.proj.Rows, dim: c.proj.Cols, res: res, lower: lo, upper: hi,
				answerVariance: res.AnswerNoiseSD * res.AnswerNoiseSD}
			o := outcome{r: res.R, noiseSD: res.AnswerNoiseSD, projNoise: res.ProjectionNoiseSD}
			for _, i := range res.Queried {
				o.hit = o.hit || ds.Y[i] >= thr
				o.queriedPct += pct(i) / float64(len(res.Queried))
			}
			if g, _ := rr.posterior(false, 4); res.GaussianRecommended != nil && rr.argmaxQueried(g, 0) != *res.GaussianRecommended {
				return outcome{}, fmt.Errorf("the rebuilt GP recommends row %d, the study's Gaussian rule %d", rr.argmaxQueried(g, 0), *res.GaussianRecommended)
			}
			for _, rule := range recRules {
				o.rows = append(o.rows, rule.rule(rr))
			}
			rec := res.Recommended
			o.nb, o.mean, o.truth = rr.neighbours(rec), res.RecommendedMean, ds.Y[rec]
			o.ans = res.Values[slices.Index(res.Queried, rec)]
			return o, nil
		})
		store.Close()
		if ferr != nil {
			b.Fatal(ferr)
		}
		var hits int
		var qp []float64
		for _, o := range out {
			hits += b2i(o.hit)
			qp = append(qp, o.queriedPct)
		}
		o0 := out[0]
		b.Logf("task %s (%d rows, target %s on [%g, %g], sd %.3g, median %.4g), Laplace ε_out = %g: answer noise sd %.4g (%.2f× the width, %.1f× the target's sd); r = %d, projection noise sd %.3g; T = %d, %d runs",
			task, ds.N, ds.Target, lo, hi, sdOf(ds.Y), med, eps, o0.noiseSD, o0.noiseSD/(hi-lo), o0.noiseSD/sdOf(ds.Y), o0.r, o0.projNoise, iters, runs)
		b.Logf("  a top-1%% row among the %d queried: %s; the queried rows' mean percentile: %s", iters, rate(hits, runs), medianCI(qp))
		for k, rule := range recRules {
			var p []float64
			below, top := 0, 0
			for _, o := range out {
				i := o.rows[k]
				p = append(p, pct(i))
				below += b2i(ds.Y[i] < med)
				top += b2i(ds.Y[i] >= thr)
			}
			b.Logf("  %-44s percentile %s; below the median row %s; top 1%% %s", rule.name, medianCI(p), rate(below, runs), rate(top, runs))
		}
		// The shipped rule's row, by its number of answered neighbours within a lengthscale.
		for _, g := range []struct {
			name   string
			lo, hi int
		}{{"0", 0, 0}, {"1–2", 1, 2}, {"≥ 3", 3, 1 << 30}} {
			var k, below int
			var over, gap float64
			for _, o := range out {
				if o.nb < g.lo || o.nb > g.hi {
					continue
				}
				k++
				below += b2i(o.truth < med)
				over += o.mean - o.truth
				gap += o.ans - o.truth
			}
			if k > 0 {
				b.Logf("  shipped rule's row with %s answered neighbours: %d runs, below the median in %s; posterior mean − truth %.3g, its answer − truth %.3g (means)",
					g.name, k, rate(below, k), over/float64(k), gap/float64(k))
			}
		}
	}
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	return (s[(n-1)/2] + s[n/2]) / 2
}

func sdOf(v []float64) float64 {
	var m, s float64
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}
