package simulate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/internal/hugepage"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
)

// Method kinds.
const (
	POGPUCB = "po-gp-ucb"
	GPUCB   = "gp-ucb"
	Random  = "random"
)

// Method is one optimiser compared by the harness.
type Method struct {
	Kind string // POGPUCB, GPUCB or Random
	R    int    // projection dimension, POGPUCB only
}

// String names the method as in the CSV: "po-gp-ucb(r=10)", "gp-ucb", "random".
func (m Method) String() string {
	if m.Kind == POGPUCB {
		return fmt.Sprintf("%s(r=%d)", POGPUCB, m.R)
	}
	return m.Kind
}

// ParseMethods expands a comma-separated list of kinds ("po-gp-ucb,gp-ucb,random") into
// methods, one po-gp-ucb per r in rs, in the order given.
func ParseMethods(kinds string, rs []int) ([]Method, error) {
	var out []Method
	for _, k := range strings.Split(kinds, ",") {
		switch k = strings.ToLower(strings.TrimSpace(k)); k {
		case POGPUCB:
			if len(rs) == 0 {
				return nil, errors.New("simulate: po-gp-ucb needs at least one r")
			}
			for _, r := range rs {
				out = append(out, Method{Kind: POGPUCB, R: r})
			}
		case GPUCB, Random:
			out = append(out, Method{Kind: k})
		case "":
		default:
			return nil, fmt.Errorf("simulate: unknown method %q (want po-gp-ucb, gp-ucb or random)", k)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("simulate: no method given")
	}
	return out, nil
}

// ParseInts parses a comma-separated list of integers such as "3,6,8".
func ParseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("simulate: %q is not an integer", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// GPSettings are the modeler's GP prior. Zero values take the defaults noted.
type GPSettings struct {
	Kernel gpucb.Kernel
	// Lengthscale; 0 means the synthetic function's lengthscale for the synthetic
	// problem, and gpucb.DefaultLengthscale of the candidates (Z or X) for data.
	Lengthscale float64
	// SignalVariance (default 1) and NoiseVariance (default: the synthetic σ_n², or
	// 1e-3 for data, as the modeler).
	SignalVariance, NoiseVariance float64
	// DeltaUCB δ' of β_t, default 0.05.
	DeltaUCB float64
	// Standardise the outputs (default: on for data, off for the synthetic GP whose
	// prior is known). Set Raw to force it off.
	Raw bool
	// FitEvery k > 0 refits the hyperparameters by maximum likelihood (gpucb.GP.Refit)
	// after every k observations, from the third on.
	FitEvery int
	// NoiseRule sets the prior for answers released with output privacy (Config.Output)
	// from public quantities: gpucb.NoisyOutputPrior with the answer noise variance
	// answerNoiseVariance. Empty means DefaultNoiseRule; NoiseRuleOff keeps the
	// exact-answer defaults above (the GP then interpolates the noise). A SignalVariance
	// or NoiseVariance given explicitly overrides the rule's, and Raw its
	// standardisation. Ignored without output privacy.
	NoiseRule gpucb.NoiseRule
	// ProjectionNoise is how PO-GP-UCB's GP treats the Gaussian projection's noise
	// (modeler.Config.ProjectionNoise; the zero value models it). The lifted mechanism
	// adds none, so it matters with ProjectionMechanism gaussian only.
	ProjectionNoise modeler.ProjectionNoise
}

// NoiseRuleOff disables the noise-aware prior (GPSettings.NoiseRule).
const NoiseRuleOff gpucb.NoiseRule = "off"

// DefaultNoiseRule is the noise rule used with output privacy unless another is given:
// the better of the rules measured on diabetes (docs/EXPERIMENTS.md, "Honest defaults").
const DefaultNoiseRule = gpucb.NoiseRuleRatio

// Config configures a simulation. Exactly one of Data and Synthetic is set.
type Config struct {
	Data      *DataConfig
	Synthetic *SyntheticConfig
	// Draws: number of independent synthetic functions (default 1; data: must be 1).
	Draws int
	// Runs per draw and method (default 10) and Iterations T per run (default 50),
	// the first being the random initial row.
	Runs, Iterations int
	// Batch q ≥ 1 is the number of rows the GP methods choose per round (GP-BUCB,
	// modeler.Config.Batch); 0 means 1. Regret is still reported per answer.
	Batch   int
	Methods []Method
	// Epsilon and Delta of each private projection.
	Epsilon, Delta float64
	// ProjectionMechanism is the curator's (curator.Config.ProjectionMechanism).
	// Simulations reproduce the paper, so the default here is the paper's lifted
	// projection. The Gaussian mechanism's noise comes from crypto/rand, so its
	// runs are not reproducible from Seed.
	ProjectionMechanism string
	// Output says how the curator releases answers (curator.Config.Output). The zero
	// value releases exact answers (the paper's setting). Lower and Upper are the public
	// range of the target column in its own units; with DataConfig.LogOutputs and
	// Minimize they are transformed as the target is (log, then [−U, −L]) before the
	// curator clips to them, so LogOutputs needs Lower > 0. The curator draws output
	// noise from crypto/rand: runs with output privacy are not reproducible from Seed.
	Output curator.OutputPrivacy
	GP     GPSettings
	// Seed makes everything reproducible: draws, initial rows, projections (with the
	// lifted mechanism), random search.
	Seed uint64
	// Workers running independent runs concurrently; default 2.
	Workers int
	// OutDir receives regret.csv, regret.png and summary.md; "" writes nothing.
	OutDir string
	// Log receives progress lines; nil discards them.
	Log io.Writer

	// Filled by defaults: the projection mechanism ProjectionMechanism names, the
	// output privacy in the units of the objective, and the GP's standardisation and
	// answer offset.
	proj        projection.Mechanism
	output      curator.OutputPrivacy
	standardise bool
	offset      float64
}

// ProjectionText describes the projection mechanism and, for the Gaussian one, how the
// GP treated its noise: "lifted projection", "gaussian projection (noise: model)".
func (c *Config) ProjectionText() string {
	mech := cmp.Or(c.ProjectionMechanism, projection.MechanismLifted)
	if m, err := projection.ParseMechanism(mech); err != nil || !m.AddsNoise() {
		return mech + " projection"
	}
	return fmt.Sprintf("%s projection (noise: %s)", mech, c.GP.ProjectionNoise)
}

// Row is one line of the regret CSV.
type Row struct {
	Method    string
	Run       int // global run number: draw·Runs + run
	Iteration int // 1-based
	Index     int // row queried
	Value     float64
	Best      float64
	Regret    float64
}

// Lift describes, for the operator, whether the projection at r lifts the singular
// values (Kharkovskii et al. 2020, Algorithm 1; docs/MATHS.md §2.1, step 6).
type Lift struct {
	R               int
	SigmaMin, Omega float64
	Lifted          bool
	Route           string
}

// Result is what Run produced.
type Result struct {
	Rows      []Row
	Summary   []Summary
	Lifts     []Lift
	Synthetic []SyntheticInfo
	Problem   string
	N, D      int
	// Output says how the curator released the answers and the GP prior used for them,
	// e.g. "exact answers" or "laplace answers (ε_out = 2, range [0, 400]; GP noise rule
	// public-range: σ_y² = 1e+04, σ_n² = 8e+04, raw, offset 200)".
	Output   string
	Duration time.Duration
	// Files written (empty without OutDir).
	CSVPath, PNGPath, SummaryPath string
}

func (c *Config) defaults() error {
	if (c.Data == nil) == (c.Synthetic == nil) {
		return errors.New("simulate: give either a data set or the synthetic problem")
	}
	if err := c.Bind().Check(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	def := NewConfig()
	c.Draws, c.Runs, c.Iterations, c.Workers = cmp.Or(c.Draws, def.Draws), cmp.Or(c.Runs, def.Runs), cmp.Or(c.Iterations, def.Iterations), cmp.Or(c.Workers, def.Workers)
	c.ProjectionMechanism, c.GP.DeltaUCB = cmp.Or(c.ProjectionMechanism, def.ProjectionMechanism), cmp.Or(c.GP.DeltaUCB, def.GP.DeltaUCB)
	proj, err := projection.ParseMechanism(c.ProjectionMechanism)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	c.proj = proj
	userSignal, userNoise := c.GP.SignalVariance, c.GP.NoiseVariance
	c.GP.SignalVariance = cmp.Or(c.GP.SignalVariance, 1)
	if c.Log == nil {
		c.Log = io.Discard
	}
	switch {
	case c.Data != nil && c.Draws != 1:
		return fmt.Errorf("simulate: a data set is one draw, got %s %d", c.Bind().Flag(&c.Draws), c.Draws)
	case len(c.Methods) == 0:
		return errors.New("simulate: no method given")
	}
	private := false
	for _, m := range c.Methods {
		switch m.Kind {
		case POGPUCB:
			private = true
			if err := (projection.Params{R: m.R, Epsilon: c.Epsilon, Delta: c.Delta}).Validate(); err != nil {
				return fmt.Errorf("simulate: %s: %w", m, err)
			}
		case GPUCB, Random:
		default:
			return fmt.Errorf("simulate: unknown method kind %q", m.Kind)
		}
	}
	// Each (draw, method) is one ledger dataset holding Runs projections.
	if private && float64(c.Runs)*c.Delta >= 0.99 {
		return fmt.Errorf("simulate: %d runs × δ = %g exceed the ledger's dataset δ cap (< 1); use fewer runs or a smaller δ", c.Runs, c.Delta)
	}
	if c.Synthetic != nil {
		if err := c.Synthetic.defaults(); err != nil {
			return err
		}
		c.GP.Lengthscale = cmp.Or(c.GP.Lengthscale, c.Synthetic.Lengthscale)
		if c.GP.NoiseVariance == 0 {
			c.GP.NoiseVariance = max(c.Synthetic.NoiseVariance, 1e-6)
		}
	} else if c.GP.NoiseVariance == 0 {
		c.GP.NoiseVariance = 1e-3
	}
	c.standardise = c.Data != nil && !c.GP.Raw
	return c.outputDefaults(userSignal, userNoise)
}

// outputDefaults transforms the public output range as the target and, with output
// privacy, applies the noise rule. userSignal and userNoise are the GP variances as
// given (0: not given).
func (c *Config) outputDefaults(userSignal, userNoise float64) error {
	o := c.Output
	o.Mechanism = cmp.Or(o.Mechanism, answer.MechanismExact)
	if answer.IsExact(o.Mechanism) {
		if o.Lower != 0 || o.Upper != 0 {
			return errors.New("simulate: an output range applies only with output privacy (laplace or gaussian)")
		}
		if c.GP.NoiseRule != "" && c.GP.NoiseRule != NoiseRuleOff {
			if _, err := gpucb.ParseNoiseRule(string(c.GP.NoiseRule)); err != nil {
				return fmt.Errorf("simulate: %w", err)
			}
		}
		c.output = o
		if err := o.Validate(); err != nil {
			return fmt.Errorf("simulate: %w", err)
		}
		return nil
	}
	if math.IsNaN(o.Lower) || math.IsNaN(o.Upper) || math.IsInf(o.Lower, 0) || math.IsInf(o.Upper, 0) || !(o.Lower < o.Upper) {
		return fmt.Errorf("simulate: output privacy needs a public target range with finite lower < upper, got [%g, %g]", o.Lower, o.Upper)
	}
	if c.Data != nil && c.Data.LogOutputs {
		if !(o.Lower > 0) {
			return fmt.Errorf("simulate: %s needs a positive output range, got lower %g", c.Bind().Flag(&c.Data.LogOutputs), o.Lower)
		}
		o.Lower, o.Upper = math.Log(o.Lower), math.Log(o.Upper)
	}
	if c.Data != nil && c.Data.Minimize {
		o.Lower, o.Upper = -o.Upper, -o.Lower
	}
	if err := o.Validate(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	c.output = o
	rule := cmp.Or(c.GP.NoiseRule, DefaultNoiseRule)
	if rule == NoiseRuleOff {
		return nil
	}
	if _, err := gpucb.ParseNoiseRule(string(rule)); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	nv, err := answerNoiseVariance(o.Mechanism, o.Epsilon, o.Delta, o.Lower, o.Upper)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	prior, err := gpucb.NoisyOutputPrior(rule, o.Lower, o.Upper, nv)
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	if userSignal == 0 {
		c.GP.SignalVariance = prior.SignalVariance
	}
	if userNoise == 0 {
		c.GP.NoiseVariance = prior.NoiseVariance
	}
	c.standardise = prior.Standardise && !c.GP.Raw
	if !c.standardise {
		c.offset = prior.Offset
	}
	return nil
}

// mix derives independent seeds (SplitMix64 finaliser over the words).
func mix(words ...uint64) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, w := range words {
		h ^= w + 0x9e3779b97f4a7c15 + (h << 6) + (h >> 2)
		h ^= h >> 30
		h *= 0xbf58476d1ce4e5b9
		h ^= h >> 27
		h *= 0x94d049bb133111eb
		h ^= h >> 31
	}
	return h
}

type job struct {
	draw, method, run int
}

// Run performs the simulation and writes its files when cfg.OutDir is set.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	res := &Result{Output: outputDescription(&cfg)}
	problems, err := drawProblems(&cfg, res)
	if err != nil {
		return nil, err
	}
	p0 := problems[0]
	res.Problem, res.N, res.D = p0.Name, p0.N, p0.D
	if cfg.Iterations > p0.N {
		return nil, fmt.Errorf("simulate: %d iterations exceed the %d rows", cfg.Iterations, p0.N)
	}
	if res.Lifts, err = lifts(ctx, &cfg, p0); err != nil {
		return nil, err
	}

	state, err := os.MkdirTemp("", "privbo-simulate-")
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer os.RemoveAll(state)
	store, err := ledger.OpenSQLite(filepath.Join(state, "ledger.db"), ledger.Limits{
		PerIdentity: ledger.Cost{Epsilon: 1e12, Delta: 0.999},
		Dataset:     ledger.Cost{Epsilon: 1e12, Delta: 0.999},
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer store.Close()

	if res.Rows, err = runAll(ctx, &cfg, problems, store, state, start); err != nil {
		return nil, err
	}
	names := make([]string, len(cfg.Methods))
	for mi, m := range cfg.Methods {
		names[mi] = m.String()
	}
	res.Summary = Summarise(res.Rows, names, cfg.Iterations)
	thresholds := make([]float64, len(problems))
	for d, p := range problems {
		thresholds[d] = TopOnePercentThreshold(p.F)
	}
	AddTopOne(res.Summary, res.Rows, func(run int) float64 { return thresholds[run/cfg.Runs] })
	res.Duration = time.Since(start)
	if cfg.OutDir != "" {
		if err := writeOutputs(&cfg, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// drawProblems loads the dataset once per draw, or draws a synthetic problem
// for each from its own seed, so that a draw does not depend on the others;
// the synthetic draws' descriptions go into res.
func drawProblems(cfg *Config, res *Result) ([]*Problem, error) {
	problems := make([]*Problem, cfg.Draws)
	for d := range problems {
		var err error
		if cfg.Data != nil {
			problems[d], err = LoadProblem(*cfg.Data)
		} else {
			var info SyntheticInfo
			problems[d], info, err = SyntheticProblem(*cfg.Synthetic, mix(cfg.Seed, uint64(d), 1))
			res.Synthetic = append(res.Synthetic, info)
			if err == nil {
				fmt.Fprintf(cfg.Log, "draw %d/%d: %s sampler, %v (jitter %g)\n", d+1, cfg.Draws, info.Sampler, info.Duration.Round(time.Millisecond), info.Jitter)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return problems, nil
}

// lifts reports which r the projection lifts, for the methods that project
// with the lifted mechanism (the only one with branches). It depends on X
// only, the same for every draw, so p is projected once per method.
func lifts(ctx context.Context, cfg *Config, p *Problem) ([]Lift, error) {
	var out []Lift
	for _, m := range cfg.Methods {
		if m.Kind != POGPUCB || !cfg.proj.Baseline() {
			continue
		}
		_, rep, err := projection.Project(ctx, p.X, p.N, p.D, projection.Params{R: m.R, Epsilon: cfg.Epsilon, Delta: cfg.Delta}, projection.SeededSource(0))
		if err != nil {
			return nil, fmt.Errorf("simulate: %w", err)
		}
		out = append(out, Lift{R: m.R, SigmaMin: rep.SigmaMin, Omega: rep.Omega, Lifted: rep.Lifted, Route: rep.Route})
	}
	return out, nil
}

// runAll runs every (draw, run, method) on cfg.Workers goroutines, each
// (draw, method) charging its own ledger dataset. The first error stops the
// rest. The rows come back in
// the order of the outputs, whatever order the runs finished in: by method,
// then run, then iteration.
func runAll(ctx context.Context, cfg *Config, problems []*Problem, store curator.Ledger, state string, start time.Time) ([]Row, error) {
	sets := ledgerDatasets(cfg, problems)
	jobs := make([]job, 0, cfg.Draws*len(cfg.Methods)*cfg.Runs)
	for d := range cfg.Draws {
		for k := range cfg.Runs {
			for mi := range cfg.Methods {
				jobs = append(jobs, job{d, mi, k})
			}
		}
	}
	out := make([][]Row, len(jobs))
	err := parallel(ctx, len(jobs), cfg.Workers, func(ctx context.Context, j int) error {
		jb := jobs[j]
		rows, err := runOne(ctx, cfg, problems[jb.draw], sets[jb.draw][jb.method], store, state, jb)
		out[j] = rows
		return err
	}, func(done int) {
		if done%max(1, len(jobs)/20) == 0 || done == len(jobs) {
			fmt.Fprintf(cfg.Log, "%d/%d runs done (%v)\n", done, len(jobs), time.Since(start).Round(time.Second))
		}
	})
	if err != nil {
		return nil, err
	}
	order := make([]int, len(jobs))
	for j := range order {
		order[j] = j
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ja, jb := jobs[a], jobs[b]
		if ja.method != jb.method {
			return ja.method - jb.method
		}
		return (ja.draw*cfg.Runs + ja.run) - (jb.draw*cfg.Runs + jb.run)
	})
	var rows []Row
	for _, j := range order {
		rows = append(rows, out[j]...)
	}
	return rows, nil
}

// ledgerDatasets names one ledger dataset per (draw, method), indexed
// [draw][method].
func ledgerDatasets(cfg *Config, problems []*Problem) [][]*dataset.Dataset {
	sets := make([][]*dataset.Dataset, cfg.Draws)
	for d, p := range problems {
		sets[d] = make([]*dataset.Dataset, len(cfg.Methods))
		for mi, m := range cfg.Methods {
			sets[d][mi] = &dataset.Dataset{
				Name: fmt.Sprintf("%s-draw%d-%s", p.Name, d, strings.NewReplacer("(", "-", ")", "", "=", "").Replace(m.String())),
				N:    p.N, D: p.D, X: p.X, Y: p.Y, Target: "f", Unit: p.Unit,
			}
		}
	}
	return sets
}

// runOne performs one run of one method on one draw against a fresh in-process curator.
func runOne(ctx context.Context, cfg *Config, p *Problem, ds *dataset.Dataset, store curator.Ledger, state string, jb job) ([]Row, error) {
	m := cfg.Methods[jb.method]
	run := jb.draw*cfg.Runs + jb.run
	projSeed := mix(cfg.Seed, uint64(jb.draw), uint64(jb.run), 2, uint64(m.R))
	dir, err := os.MkdirTemp(state, "run-")
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer os.RemoveAll(dir)
	cur, err := curator.New(curator.Config{
		Dataset: ds, Ledger: store, StateDir: dir, Logger: zap.NewNop(),
		Projection:                 cfg.proj, // parsed once, in defaults
		Output:                     cfg.output,
		SimulationProjectionSource: func() projection.Source { return projection.SeededSource(projSeed) },
		// The measurements of r above d (docs/EXPERIMENTS.md) stay reproducible.
		AllowWideProjection: true,
	})
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	identity := fmt.Sprintf("sim-run%d", run)
	n := p.N
	first := rand.New(rand.NewPCG(mix(cfg.Seed, uint64(jb.draw), uint64(jb.run), 1), 7)).IntN(n)

	gpWorkers := 1
	if cfg.Workers == 1 {
		gpWorkers = 0
	}
	var queried []int
	switch m.Kind {
	case POGPUCB, GPUCB:
		local := &Local{Curator: cur, Identity: identity, Offset: cfg.offset}
		r := m.R
		if m.Kind == GPUCB {
			local.Candidates, local.Dim, r = p.X, p.D, p.D
		}
		res, err := modeler.Run(ctx, local, cfg.session(r, run, first, gpWorkers))
		if err != nil {
			return nil, fmt.Errorf("simulate: %s run %d: %w", m, run, err)
		}
		queried = res.Queried
	case Random:
		rng := rand.New(rand.NewPCG(mix(cfg.Seed, uint64(jb.draw), uint64(jb.run), 3), 7))
		perm := rng.Perm(n)
		// Start from the common initial row.
		k := slices.Index(perm, first)
		perm[0], perm[k] = perm[k], perm[0]
		queried = perm[:cfg.Iterations]
		for _, i := range queried {
			if _, _, err := cur.Query(ctx, identity, []int{i}); err != nil {
				return nil, fmt.Errorf("simulate: %s run %d: %w", m, run, err)
			}
		}
	}
	fmax := slices.Max(p.F)
	rows := make([]Row, 0, cfg.Iterations)
	best := math.Inf(-1)
	for t, i := range queried {
		best = max(best, p.F[i])
		rows = append(rows, Row{Method: m.String(), Run: run, Iteration: t + 1, Index: i, Value: p.F[i], Best: best, Regret: fmax - best})
	}
	return rows, nil
}

// session is the modeler's configuration of a GP run: projection dimension r (the
// inputs' dimension for gp-ucb), global run number run, initial row first. The run is
// the modeler's own study session (pkg/modeler.Run): the same GP-UCB, GP-BUCB batches,
// refits and recommendation as the modeler binary, over the in-process curator. Every GP
// setting is explicit here (Config.defaults applied the noise rule), so the modeler's
// own prior rule does not apply.
func (c *Config) session(r, run, first, workers int) modeler.Config {
	return modeler.Config{
		R: r, Epsilon: c.Epsilon, Delta: c.Delta, Label: fmt.Sprintf("run-%d", run),
		Iterations: c.Iterations, Batch: c.Batch,
		Kernel: c.GP.Kernel, Lengthscale: c.GP.Lengthscale,
		SignalVariance: c.GP.SignalVariance, NoiseVariance: c.GP.NoiseVariance,
		FitEvery: c.GP.FitEvery, DeltaUCB: c.GP.DeltaUCB, RawOutputs: !c.standardise,
		InitialIndex: first, Workers: workers, ProjectionNoise: c.GP.ProjectionNoise,
		WideProjection: true, // the paper's synthetic runs project d = 2 to r = 10
	}
}

// readRelease reads a stored release (matrixio format) into memory, decoding as it reads.
func readRelease(ctx context.Context, pr *curator.Projection) ([]float64, error) {
	f, err := pr.Open(ctx)
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	defer f.Close()
	z := hugepage.Floats(pr.Rows * pr.Cols) // as a received projection
	if err := matrixio.ReadFloat64s(z, f); err != nil {
		return nil, fmt.Errorf("simulate: reading release %s: %w", pr.ID, err)
	}
	return z, nil
}

// answerNoiseVariance is the variance of the noise the named answer mechanism adds to
// each answer at (ε, δ) on [lower, upper] (0 for exact answers): the simulation plays
// the curator, so it calibrates the mechanism itself, as the curator does.
func answerNoiseVariance(mechanism string, epsilon, delta, lower, upper float64) (float64, error) {
	if answer.IsExact(mechanism) {
		return 0, nil
	}
	if answer.PureEpsilon(mechanism) {
		delta = 0 // the variance of a pure mechanism does not depend on δ
	}
	m, err := answer.New(mechanism, answer.Params{Epsilon: epsilon, Delta: delta, Lower: lower, Upper: upper})
	if err != nil {
		return 0, err
	}
	return m.NoiseVariance(), nil
}

// parallel calls f(ctx, i) for i in [0, n) on workers goroutines. The first error
// cancels the calls not yet started and is returned; a cancelled ctx is returned as
// "simulate: …". After each call, done is told how many calls have ended (one at a time).
func parallel(ctx context.Context, n, workers int, f func(ctx context.Context, i int) error, done func(ended int)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		ended    int
		next     = make(chan int)
	)
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				err := f(ctx, i)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
					cancel()
				}
				ended++
				if done != nil {
					done(ended)
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	return nil
}
