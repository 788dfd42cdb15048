package modeler

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"time"

	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/study"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Config configures a PO-GP-UCB study.
type Config struct {
	// R, Epsilon, Delta are the projection's parameters (docs/MATHS.md §2.1); Label optionally
	// asks for an independent release with the same parameters.
	R              int
	Epsilon, Delta float64
	Label          string
	// Iterations T ≥ 1: the number of queries, including the initial one.
	Iterations int
	// Batch q ≥ 1 is the number of rows chosen per round and sent in one Query request
	// (GP-BUCB, see the package documentation); 0 means 1. The initial row is a round of
	// its own.
	Batch int
	// GP settings. Lengthscale 0 takes gpucb.DefaultLengthscale of Z. SignalVariance and
	// NoiseVariance 0 take the prior that fits the answers the curator releases
	// (GetDatasetInfo's output privacy, see NoiseRule): with private answers ("laplace"
	// or "gaussian") the noise-aware prior gpucb.NoisyOutputPrior(NoiseRule, L, U, σ_n²)
	// with σ_n² = gpucb.AnswerNoiseVariance of the curator's mechanism, (ε, δ) and range
	// [L, U]; with exact answers SignalVariance 1 and NoiseVariance 1e-3. Both are in
	// standardised output units. A value given explicitly is kept.
	Kernel                                     gpucb.Kernel
	Lengthscale, SignalVariance, NoiseVariance float64
	// FitEvery k > 0 refits the three hyperparameters above by maximum likelihood
	// (gpucb.GP.Refit, from the current values) at the end of every round that takes the
	// number of answers t to or past a multiple of k, once t ≥ 3: for q = 1 after every
	// k-th answer, as pkg/simulate does (package documentation). 0 keeps them fixed.
	FitEvery int
	// DeltaUCB is δ' of the β_t schedule (default 0.05); ConstantBeta > 0 overrides it.
	DeltaUCB, ConstantBeta float64
	// AllowRepeats lets GP-UCB choose rows it has already queried (they cost nothing
	// but spend an iteration); by default it moves on to unqueried rows.
	AllowRepeats bool
	// RawOutputs turns off output standardisation.
	RawOutputs bool
	// InitialIndex is the first row queried; -1 (default) draws it uniformly at random,
	// as the paper's runs do.
	InitialIndex int
	// Progress, if set, is called after every observation.
	Progress func(Step)
	// Waiting, if set, is called while a query is unanswered: first after WaitNotice
	// (default 2 s), then every 30 s, with the rows and the time waited. Slow
	// evaluations (a lab test, a person recording a result) make queries wait.
	Waiting    func(rows []int, waited time.Duration)
	WaitNotice time.Duration
	// Resumed, if set, is called when RunStudy continues a stored study.
	Resumed func(Resume)
}

// Resume reports how a stored study was continued.
type Resume struct {
	Study string
	// Iterations already recorded, replayed into the GP; Rebuild is the time from the
	// start of the run to the GP ready (loading Z, or fetching it again, and the replay).
	Iterations int
	Rebuild    time.Duration
	// Projection is true when the release had not been stored and was asked again
	// (the curator replays a release it made before at no cost).
	Projection bool
	// PreviousIterations is the study's T before this run changed it to
	// Config.Iterations, 0 if it did not.
	PreviousIterations int
}

// NoiseRule is the rule that sets the GP prior for answers released with output privacy
// when Config leaves SignalVariance or NoiseVariance at 0: the rule pkg/simulate uses by
// default (simulate.DefaultNoiseRule), which had the best top-1% hit rate and simple
// regret pooled over ε_out = 1, 2, 5 on diabetes (docs/EXPERIMENTS.md, "Honest
// defaults"). It keeps the standardisation of the answers, SignalVariance 1 and
// NoiseVariance σ_n²/s_f² with s_f = (U − L)/4. It is fixed, not a setting, so that a
// study stored with variances 0 resumes with the prior it was run with.
const NoiseRule = gpucb.NoiseRuleRatio

// exactSignalVariance and exactNoiseVariance are the prior for exact answers (and for
// private ones when the user gives the other variance only).
const (
	exactSignalVariance = 1
	exactNoiseVariance  = 1e-3
)

// prior returns the GP's signal and noise variances for answers released under op, and
// the noise variance of those answers (0 for exact answers). A variance given in c
// (non-zero) is kept; the other is the rule's (NoiseRule) with private answers, or the
// exact-answer default. pkg/simulate applies the same rule (GPSettings.NoiseRule).
func (c *Config) prior(op study.OutputPrivacy) (signal, noise, answerNoise float64, err error) {
	signal, noise = c.SignalVariance, c.NoiseVariance
	if !op.Exact() && (signal == 0 || noise == 0) {
		answerNoise, err = gpucb.AnswerNoiseVariance(op.Mechanism, op.EpsilonPerIndex, op.DeltaPerIndex, op.Lower, op.Upper)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("modeler: the curator's output privacy: %w", err)
		}
		p, err := gpucb.NoisyOutputPrior(NoiseRule, op.Lower, op.Upper, answerNoise)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("modeler: the curator's output privacy: %w", err)
		}
		if signal == 0 {
			signal = p.SignalVariance
		}
		if noise == 0 {
			noise = p.NoiseVariance
		}
	}
	if signal == 0 {
		signal = exactSignalVariance
	}
	if noise == 0 {
		noise = exactNoiseVariance
	}
	return signal, noise, answerNoise, nil
}

// Step reports one observation.
type Step struct {
	// Iteration t ≥ 1 and Round (one Query request) ≥ 1.
	Iteration, Round, Index int
	Value                   float64
	BestIndex               int
	BestValue               float64
	Replayed                bool
	EpsilonRemaining        float64
	DeltaRemaining          float64
}

// Result is the summary of a study.
type Result struct {
	// Study is the name of the stored study ("" for Run).
	Study     string  `json:"study,omitempty"`
	Dataset   string  `json:"dataset"`
	ReleaseID string  `json:"release_id"`
	Rows      int     `json:"rows"`
	R         int     `json:"r"`
	BestIndex int     `json:"best_index"`
	BestValue float64 `json:"best_value"`
	// Recommended is the queried row with the highest posterior mean at the end of
	// the study, and RecommendedMean that mean. With private (noisy) answers the
	// highest answer (BestIndex) is mostly the luckiest noise draw; the posterior mean
	// pools every answer through the GP and is what to act on, as Vizier and Optuna
	// recommend under noisy objectives. With exact answers the two agree up to the
	// GP's small noise term.
	Recommended     int       `json:"recommended_index"`
	RecommendedMean float64   `json:"recommended_mean"`
	Iterations      int       `json:"iterations"`
	Queried         []int     `json:"queried"`
	Values          []float64 `json:"values"`
	Batch           int       `json:"batch"`
	Rounds          int       `json:"rounds"`
	// Lengthscale, SignalVariance and NoiseVariance are the kernel hyperparameters in
	// use at the end: the configured ones, or the last maximum-likelihood fit when
	// Config.FitEvery > 0. Refits counts the fits that succeeded (a failed fit keeps the
	// previous values), those replayed when a study resumed included.
	Lengthscale    float64 `json:"lengthscale"`
	SignalVariance float64 `json:"signal_variance"`
	NoiseVariance  float64 `json:"noise_variance"`
	Refits         int     `json:"refits"`
	// NoisePrior names the rule that set the prior for private answers (NoiseRule), ""
	// when the answers were exact or both variances were given; AnswerNoiseVariance is
	// the variance of the noise the curator adds to each answer (0 for exact answers).
	NoisePrior          string  `json:"noise_prior,omitempty"`
	AnswerNoiseVariance float64 `json:"answer_noise_variance,omitempty"`
	EpsilonSpent        float64 `json:"epsilon_spent"`
	DeltaSpent          float64 `json:"delta_spent"`
	EpsilonRemaining    float64 `json:"epsilon_remaining"`
	DeltaRemaining      float64 `json:"delta_remaining"`
	// Protection is what the curator stated about the releases the study received.
	Protection Protection `json:"protection"`
}

// Protection is the guarantee of each release a study received, as the curator stated
// it (GetDatasetInfo and the projection header).
type Protection struct {
	// DatasetID is the curator's stable dataset id ("" from curators without one).
	DatasetID string `json:"dataset_id,omitempty"`
	// ProjectionMechanism, ProjectionRelation and ProjectionGuarantee describe the
	// projection release.
	ProjectionMechanism string `json:"projection_mechanism,omitempty"`
	ProjectionRelation  string `json:"projection_relation,omitempty"`
	ProjectionGuarantee string `json:"projection_guarantee"`
	// AnswersMechanism ("laplace", "gaussian" or "none"), AnswersRelation and
	// AnswersGuarantee describe the query answers; exact answers ("none") have no
	// guarantee.
	AnswersMechanism string `json:"answers_mechanism"`
	AnswersRelation  string `json:"answers_relation,omitempty"`
	AnswersGuarantee string `json:"answers_guarantee"`
	// ExactAnswers is true when the answers were released without privacy.
	ExactAnswers bool `json:"exact_answers"`
}

// answersGuarantee is the answers' guarantee of op, stated by the curator or, from a
// curator that states none, derived from its mechanism.
func answersGuarantee(mechanism, stated string, eps, delta float64) string {
	switch {
	case stated != "":
		return stated
	case mechanism == "" || mechanism == "none":
		return "no guarantee (ε = ∞): exact answers"
	}
	return fmt.Sprintf("each answer (ε=%g, δ=%g)-DP (%s mechanism), as the curator's settings state", eps, delta, mechanism)
}

// protectionOf is the Protection of a stored release.
func protectionOf(rel *study.Release) Protection {
	op := rel.OutputPrivacy
	mech := op.Mechanism
	if mech == "" {
		mech = "none"
	}
	return Protection{DatasetID: rel.DatasetID, ProjectionMechanism: rel.Mechanism, ProjectionRelation: rel.Relation,
		ProjectionGuarantee: rel.Guarantee, AnswersMechanism: mech, AnswersRelation: op.Relation,
		AnswersGuarantee: answersGuarantee(op.Mechanism, op.Guarantee, op.EpsilonPerIndex, op.DeltaPerIndex), ExactAnswers: op.Exact()}
}

// releaseOf is the stored form of a projection received with the dataset's info.
func releaseOf(info *curatorv1.GetDatasetInfoResponse, proj *Projection, cfg Config) study.Release {
	op := info.GetOutputPrivacy()
	return study.Release{ID: proj.ReleaseID, Dataset: info.GetName(), DatasetID: info.GetDatasetId(), Rows: proj.Rows, Cols: proj.Cols,
		Epsilon: cfg.Epsilon, Delta: cfg.Delta, Replayed: proj.Replayed, Guarantee: proj.Guarantee,
		Mechanism: info.GetProjectionMechanism(), Relation: info.GetProjectionRelation(),
		ProtectedUnit: info.GetProtectedUnit(), MaxQueryIndices: int(info.GetMaxQueryIndices()),
		Identity: proj.Budget.GetIdentity(),
		OutputPrivacy: study.OutputPrivacy{Mechanism: op.GetMechanism(), EpsilonPerIndex: op.GetEpsilonPerIndex(),
			DeltaPerIndex: op.GetDeltaPerIndex(), Lower: op.GetLower(), Upper: op.GetUpper(),
			Relation: op.GetRelation(), Guarantee: op.GetGuarantee()}}
}

func (c *Config) defaults() error {
	if c.Iterations < 1 {
		return fmt.Errorf("modeler: iterations must be ≥ 1, got %d", c.Iterations)
	}
	if c.R < 1 {
		return fmt.Errorf("modeler: projection dimension r must be ≥ 1, got %d", c.R)
	}
	if c.Batch == 0 {
		c.Batch = 1
	}
	if c.Batch < 1 {
		return fmt.Errorf("modeler: batch must be ≥ 1, got %d", c.Batch)
	}
	if c.InitialIndex < -1 {
		return fmt.Errorf("modeler: initial index must be ≥ 0, or −1 for a random row, got %d", c.InitialIndex)
	}
	if c.FitEvery < 0 {
		return fmt.Errorf("modeler: fit-every must be ≥ 0 (0 keeps the hyperparameters fixed, k > 0 refits them every k answers), got %d", c.FitEvery)
	}
	// SignalVariance and NoiseVariance stay 0 when not given: they are taken from the
	// answers' privacy once the curator has described it (Config.prior).
	if c.DeltaUCB == 0 {
		c.DeltaUCB = 0.05
	}
	// The GP's settings are checked by gpucb itself, on one stand-in candidate, so that a
	// bad one is refused before the curator charges the projection. A lengthscale of 0
	// is taken from Z later; any positive stand-in checks the rest.
	ls := c.Lengthscale
	if ls == 0 {
		ls = 1
	}
	// Variances left at 0 are checked with the exact-answer stand-ins: the noise-aware
	// prior is positive whenever the curator's output privacy is valid.
	gc := c.gpConfig(ls, cmp.Or(c.SignalVariance, exactSignalVariance), cmp.Or(c.NoiseVariance, exactNoiseVariance))
	gc.Capacity = 0
	if _, err := gpucb.New([]float64{0}, 1, 1, gc); err != nil {
		return fmt.Errorf("modeler: %w", err)
	}
	return nil
}

// gpConfig is the GP configuration of c with lengthscale ls and the given variances.
func (c *Config) gpConfig(ls, signal, noise float64) gpucb.Config {
	return gpucb.Config{
		Kernel: c.Kernel, Lengthscale: ls, SignalVariance: signal, NoiseVariance: noise,
		Delta: c.DeltaUCB, ConstantBeta: c.ConstantBeta, SkipQueried: !c.AllowRepeats,
		Standardise: !c.RawOutputs, Capacity: c.Iterations,
	}
}

// Settings returns the study settings of c, after defaults, as RunStudy stores and
// compares them.
func (c Config) Settings() (study.Settings, error) {
	if err := c.defaults(); err != nil {
		return study.Settings{}, err
	}
	return study.Settings{
		R: c.R, Epsilon: c.Epsilon, Delta: c.Delta, Label: c.Label, Iterations: c.Iterations, Batch: c.Batch,
		Kernel: c.Kernel.String(), Lengthscale: c.Lengthscale, SignalVariance: c.SignalVariance, NoiseVariance: c.NoiseVariance,
		FitEvery: c.FitEvery, DeltaUCB: c.DeltaUCB, ConstantBeta: c.ConstantBeta, AllowRepeats: c.AllowRepeats, RawOutputs: c.RawOutputs,
		InitialIndex: c.InitialIndex,
	}, nil
}

// ConfigFromSettings is the inverse of Config.Settings (without callbacks).
func ConfigFromSettings(s study.Settings) (Config, error) {
	k, err := gpucb.ParseKernel(s.Kernel)
	if err != nil {
		return Config{}, fmt.Errorf("modeler: %w", err)
	}
	return Config{
		R: s.R, Epsilon: s.Epsilon, Delta: s.Delta, Label: s.Label, Iterations: s.Iterations, Batch: s.Batch,
		Kernel: k, Lengthscale: s.Lengthscale, SignalVariance: s.SignalVariance, NoiseVariance: s.NoiseVariance,
		FitEvery: s.FitEvery, DeltaUCB: s.DeltaUCB, ConstantBeta: s.ConstantBeta, AllowRepeats: s.AllowRepeats, RawOutputs: s.RawOutputs,
		InitialIndex: s.InitialIndex,
	}, nil
}

// Run performs a study against the curator behind client, keeping nothing on disk (see
// RunStudy for a study that survives a crash).
func Run(ctx context.Context, client curatorv1.CuratorServiceClient, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	info, proj, err := fetchRelease(ctx, client, cfg)
	if err != nil {
		return nil, err
	}
	rel := releaseOf(info, proj, cfg)
	s, err := newSession(cfg, client, proj.Z, proj.Rows, proj.Cols, rel.OutputPrivacy)
	if err != nil {
		return nil, err
	}
	s.res.Dataset, s.res.ReleaseID = info.GetName(), proj.ReleaseID
	s.res.Protection = protectionOf(&rel)
	s.budget = proj.Budget
	initial, err := initialIndex(cfg.InitialIndex, proj.Rows)
	if err != nil {
		return nil, err
	}
	if err := s.loop(ctx, initial, nil); err != nil {
		return s.res, err
	}
	return s.finish(), nil
}

func checkBatch(q, maxIndices int) error {
	if maxIndices > 0 && q > maxIndices {
		return fmt.Errorf("modeler: batch %d exceeds the curator's %d indices per query", q, maxIndices)
	}
	return nil
}

// session is one study's GP and results while it runs.
type session struct {
	cfg    Config
	client curatorv1.CuratorServiceClient
	z      []float64
	n, dim int
	gcfg   gpucb.Config
	gp     *gpucb.GP
	ys     []float64 // real answers in order, as observed by gp
	res    *Result
	budget *curatorv1.Budget
	rounds int
}

// checkRows refuses more iterations than rows when a row may be queried only once.
func checkRows(iterations, n int, allowRepeats bool) error {
	if iterations > n && !allowRepeats {
		return fmt.Errorf("modeler: %d iterations exceed the %d rows; allow repeats or ask for fewer", iterations, n)
	}
	return nil
}

// newSession builds the GP over Z for answers released under op (the curator's output
// privacy, which sets the prior when cfg leaves the variances at 0: Config.prior).
func newSession(cfg Config, client curatorv1.CuratorServiceClient, z []float64, n, dim int, op study.OutputPrivacy) (*session, error) {
	if err := checkRows(cfg.Iterations, n, cfg.AllowRepeats); err != nil {
		return nil, err
	}
	ls := cfg.Lengthscale
	if ls == 0 {
		ls = gpucb.DefaultLengthscale(z, n, dim)
	}
	signal, noise, answerNoise, err := cfg.prior(op)
	if err != nil {
		return nil, err
	}
	gcfg := cfg.gpConfig(ls, signal, noise)
	gp, err := gpucb.New(z, n, dim, gcfg)
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	res := &Result{Rows: n, R: dim, BestIndex: -1, BestValue: math.Inf(-1), Batch: cfg.Batch,
		Lengthscale: ls, SignalVariance: signal, NoiseVariance: noise, AnswerNoiseVariance: answerNoise}
	if !op.Exact() && (cfg.SignalVariance == 0 || cfg.NoiseVariance == 0) {
		res.NoisePrior = string(NoiseRule)
	}
	return &session{cfg: cfg, client: client, z: z, n: n, dim: dim, gcfg: gcfg, gp: gp, res: res}, nil
}

// observe conditions the GP on one real answer and updates the result.
func (s *session) observe(iteration, round, i int, y float64) error {
	if err := s.gp.Observe(i, y); err != nil {
		return fmt.Errorf("modeler: iteration %d: %w", iteration, err)
	}
	s.ys = append(s.ys, y)
	s.res.Queried = append(s.res.Queried, i)
	s.res.Values = append(s.res.Values, y)
	if y > s.res.BestValue {
		s.res.BestValue, s.res.BestIndex = y, i
	}
	s.res.Iterations = iteration
	s.rounds = max(s.rounds, round)
	s.res.Rounds = s.rounds
	return nil
}

// observeRound conditions the GP on one round's answers in order, calling each (if set)
// after each of them, and then refits the hyperparameters if the round took the number
// of answers to or past a multiple of Config.FitEvery. The live loop and the replay of a
// stored study both go through it, so that both refit at the same points.
func (s *session) observeRound(recs []study.Observation, each func(study.Observation)) error {
	before := s.gp.T()
	for _, r := range recs {
		if err := s.observe(r.Iteration, r.Round, r.Index, r.Value); err != nil {
			return err
		}
		if each != nil {
			each(r)
		}
	}
	s.refit(before)
	return nil
}

// refit fits the hyperparameters by maximum likelihood when the answers went from before
// to t ≥ 3 across a multiple of k = Config.FitEvery (for one answer per round: when
// t % k = 0, pkg/simulate's rule). A failed fit leaves the GP as it was (gpucb.GP.Refit
// guarantees it) and the study goes on with the previous hyperparameters: which
// happens is as deterministic as the fit itself.
func (s *session) refit(before int) {
	k, t := s.cfg.FitEvery, s.gp.T()
	if k <= 0 || t < 3 || t/k == before/k {
		return
	}
	h, err := s.gp.Refit(gpucb.FitOptions{Seed: fitSeed(t)})
	if err != nil {
		return
	}
	s.res.Lengthscale, s.res.SignalVariance, s.res.NoiseVariance = h.Lengthscale, h.SignalVariance, h.NoiseVariance
	s.res.Refits++
}

// fitSeed is the seed of the random restarts of the fit after t answers. It is a fixed
// function of t so that a resumed study, which replays its refits, fits exactly as an
// uninterrupted one. The restarts only search the likelihood of data the modeler already
// holds (Z and released answers); they protect nothing, so a seeded generator is the
// right tool. (SplitMix64's finaliser, to spread consecutive t over the seed space.)
func fitSeed(t int) uint64 {
	h := uint64(t) + 0x9e3779b97f4a7c15
	h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
	h = (h ^ h>>27) * 0x94d049bb133111eb
	return h ^ h>>31
}

// loop runs the remaining rounds, starting from the answers already observed; the first
// round (t = 0) is the initial row alone. record, if set, is called with every round's
// answers before they enter the GP.
func (s *session) loop(ctx context.Context, initial int, record func([]study.Observation, *curatorv1.Budget) error) error {
	for t := s.gp.T(); t < s.cfg.Iterations; {
		var batch []int
		if t == 0 {
			batch = []int{initial}
		} else {
			var err error
			if batch, _, err = s.chooseBatch(min(s.cfg.Batch, s.cfg.Iterations-t)); err != nil {
				return fmt.Errorf("modeler: iteration %d: %w", t+1, err)
			}
		}
		req := &curatorv1.QueryRequest{Indices: make([]uint64, len(batch))}
		for k, i := range batch {
			req.Indices[k] = uint64(i)
		}
		resp, err := s.query(ctx, req, batch)
		if err != nil {
			return fmt.Errorf("modeler: query of rows %v: %w", batch, err)
		}
		obs := resp.GetObservations()
		if len(obs) != len(batch) {
			return fmt.Errorf("modeler: curator answered %d observations for %d indices", len(obs), len(batch))
		}
		round := s.rounds + 1
		recs := make([]study.Observation, len(batch))
		now := time.Now()
		for k, o := range obs {
			if o.GetIndex() != uint64(batch[k]) {
				return fmt.Errorf("modeler: curator answered row %d in place of row %d", o.GetIndex(), batch[k])
			}
			recs[k] = study.Observation{Iteration: t + 1 + k, Round: round, Index: batch[k], Value: o.GetValue(),
				Replayed: o.GetReplayed(), Time: now}
		}
		s.budget = resp.GetBudget()
		if record != nil {
			if err := record(recs, s.budget); err != nil {
				return err
			}
		}
		var progress func(study.Observation)
		if s.cfg.Progress != nil {
			progress = func(r study.Observation) {
				s.cfg.Progress(Step{Iteration: r.Iteration, Round: r.Round, Index: r.Index, Value: r.Value,
					BestIndex: s.res.BestIndex, BestValue: s.res.BestValue, Replayed: r.Replayed,
					EpsilonRemaining: s.budget.GetEpsilonRemaining(), DeltaRemaining: s.budget.GetDeltaRemaining()})
			}
		}
		if err := s.observeRound(recs, progress); err != nil {
			return err
		}
		t += len(batch)
	}
	return nil
}

// query asks the curator for rows, waiting for it to be reachable and asking again when
// the connection breaks mid-query (a curator restart): a query is idempotent — rows
// already released come back as replays at no cost — so retrying is safe. When the
// curator's rate limits refuse it with a RetryInfo, it waits as long as they ask and asks
// again. It gives up only when ctx ends or the curator refuses the request (a budget
// refusal among them).
func (s *session) query(ctx context.Context, req *curatorv1.QueryRequest, rows []int) (*curatorv1.QueryResponse, error) {
	start := time.Now()
	done := make(chan struct{})
	defer close(done)
	if s.cfg.Waiting != nil {
		notice := s.cfg.WaitNotice
		if notice <= 0 {
			notice = 2 * time.Second
		}
		go func() {
			t := time.NewTimer(notice)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					s.cfg.Waiting(rows, time.Since(start))
					t.Reset(30 * time.Second)
				}
			}
		}()
	}
	backoff := 100 * time.Millisecond
	for {
		resp, err := s.client.Query(ctx, req, grpc.WaitForReady(true))
		if err == nil || ctx.Err() != nil {
			return resp, err
		}
		wait, ok := retryDelay(err)
		if !ok {
			if status.Code(err) != codes.Unavailable {
				return resp, err
			}
			wait, backoff = backoff, min(2*backoff, 5*time.Second)
		}
		if sleep(ctx, wait) != nil {
			return nil, err
		}
	}
}

// retryDelay returns how long a RESOURCE_EXHAUSTED status asks the caller to wait before
// trying again, from its errdetails.RetryInfo (the curator's rate and concurrency
// limits); ok is false for any other error. A refusal by the privacy budget carries no
// RetryInfo: waiting would not change it.
func retryDelay(err error) (d time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, det := range st.Details() {
		if ri, isRetry := det.(*errdetails.RetryInfo); isRetry {
			return max(ri.GetRetryDelay().AsDuration(), minRetryDelay), true
		}
	}
	return 0, false
}

// minRetryDelay is the least wait before a retry the curator asked for.
const minRetryDelay = 10 * time.Millisecond

// sleep waits d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (s *session) finish() *Result {
	s.res.Recommended, s.res.RecommendedMean = -1, math.Inf(-1)
	for _, i := range s.res.Queried {
		if m := s.gp.Mean(i); s.res.Recommended < 0 || m > s.res.RecommendedMean {
			s.res.Recommended, s.res.RecommendedMean = i, m
		}
	}
	b := s.budget
	s.res.EpsilonSpent, s.res.DeltaSpent = b.GetEpsilonSpent(), b.GetDeltaSpent()
	s.res.EpsilonRemaining, s.res.DeltaRemaining = b.GetEpsilonRemaining(), b.GetDeltaRemaining()
	return s.res
}

func initialIndex(i, n int) (int, error) {
	if i >= 0 {
		if i >= n {
			return 0, fmt.Errorf("modeler: initial index %d is out of range [0, %d)", i, n)
		}
		return i, nil
	}
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("modeler: %w", err)
	}
	return int(v.Int64()), nil
}

// infoTimeout bounds the first request of a run, which reaches the curator fail-fast.
const infoTimeout = 30 * time.Second

// datasetInfo asks the curator to describe its dataset. It is the first request of a
// run and fails fast (no WaitForReady, at most infoTimeout): a wrong address or TLS
// files that the curator refuses are reported at once, rather than waited out as the
// queries wait out a curator restart.
func datasetInfo(ctx context.Context, client curatorv1.CuratorServiceClient) (*curatorv1.GetDatasetInfoResponse, error) {
	info, err := retryRateLimited(ctx, func() (*curatorv1.GetDatasetInfoResponse, error) {
		ictx, cancel := context.WithTimeout(ctx, infoTimeout)
		defer cancel()
		return client.GetDatasetInfo(ictx, &curatorv1.GetDatasetInfoRequest{})
	})
	if err != nil {
		return nil, infoError(ctx, err)
	}
	return info, nil
}

// retryRateLimited calls call until it returns anything but a rate-limit refusal,
// waiting between calls as long as the refusal's RetryInfo asks (see retryDelay). If
// ctx ends while waiting it returns the last refusal.
func retryRateLimited[T any](ctx context.Context, call func() (T, error)) (T, error) {
	for {
		v, err := call()
		if d, ok := retryDelay(err); ok && sleep(ctx, d) == nil {
			continue
		}
		return v, err
	}
}

// infoError explains an error of datasetInfo.
func infoError(ctx context.Context, err error) error {
	if c := status.Code(err); ctx.Err() == nil && (c == codes.Unavailable || c == codes.DeadlineExceeded) {
		return fmt.Errorf("modeler: cannot reach the curator; check its address and the TLS files (--curator, --ca, --cert, --key, --server-name): %w", err)
	}
	return fmt.Errorf("modeler: dataset info: %w", err)
}

// fetchRelease reads the dataset's description, checks the batch size against the
// curator's limit and the iterations and initial row against its rows, and only then
// receives the projection cfg asks for.
func fetchRelease(ctx context.Context, client curatorv1.CuratorServiceClient, cfg Config) (*curatorv1.GetDatasetInfoResponse, *Projection, error) {
	info, err := datasetInfo(ctx, client)
	if err != nil {
		return nil, nil, err
	}
	if err := checkBatch(cfg.Batch, int(info.GetMaxQueryIndices())); err != nil {
		return nil, nil, err
	}
	// What can be checked against the dataset's size is checked before the projection
	// is charged.
	n := int(min(info.GetRows(), math.MaxInt32))
	if err := checkRows(cfg.Iterations, n, cfg.AllowRepeats); err != nil {
		return nil, nil, err
	}
	if cfg.InitialIndex >= n {
		return nil, nil, fmt.Errorf("modeler: initial index %d is out of range [0, %d) of dataset %s", cfg.InitialIndex, n, info.GetName())
	}
	proj, err := FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{
		Dimension: uint32(cfg.R), Epsilon: cfg.Epsilon, Delta: cfg.Delta, Label: cfg.Label,
	})
	if err != nil {
		return nil, nil, err
	}
	return info, proj, nil
}

// Projection is a released matrix as received.
type Projection struct {
	ReleaseID  string
	Rows, Cols int
	Replayed   bool
	Guarantee  string
	Budget     *curatorv1.Budget
	// Z is row-major Rows × Cols.
	Z []float64
}

// FetchProjection receives a projection release, checking chunk order, sizes and the
// trailer's SHA-256. When the curator's rate limits ask it to wait, it waits and asks
// again (a release already made is replayed at no cost).
func FetchProjection(ctx context.Context, client curatorv1.CuratorServiceClient, req *curatorv1.ReleaseProjectionRequest) (*Projection, error) {
	return retryRateLimited(ctx, func() (*Projection, error) { return fetchProjection(ctx, client, req) })
}

func fetchProjection(ctx context.Context, client curatorv1.CuratorServiceClient, req *curatorv1.ReleaseProjectionRequest) (*Projection, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.ReleaseProjection(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("modeler: projection: %w", err)
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("modeler: projection: %w", err)
	}
	h := msg.GetHeader()
	if h == nil {
		return nil, errors.New("modeler: projection stream did not start with a header")
	}
	const maxElems = 1 << 31
	if h.GetRows() == 0 || h.GetCols() == 0 || h.GetRows()*uint64(h.GetCols()) > maxElems {
		return nil, fmt.Errorf("modeler: projection header announces an unusable %d × %d matrix", h.GetRows(), h.GetCols())
	}
	p := &Projection{ReleaseID: h.GetReleaseId(), Rows: int(h.GetRows()), Cols: int(h.GetCols()), Replayed: h.GetReplayed(),
		Guarantee: h.GetGuarantee(), Budget: h.GetBudget()}
	p.Z = make([]float64, p.Rows*p.Cols)
	sum := sha256.New()
	next := 0
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil, errors.New("modeler: projection stream ended without a trailer")
		}
		if err != nil {
			return nil, fmt.Errorf("modeler: projection: %w", err)
		}
		switch part := msg.GetPart().(type) {
		case *curatorv1.ReleaseProjectionResponse_Chunk:
			c := part.Chunk
			rows := int(c.GetRowCount())
			if c.GetFirstRow() != uint64(next) || rows <= 0 || next+rows > p.Rows {
				return nil, fmt.Errorf("modeler: projection chunk for rows [%d, %d) out of order (expected row %d of %d)", c.GetFirstRow(), c.GetFirstRow()+uint64(rows), next, p.Rows)
			}
			if err := matrixio.DecodeFloat64s(p.Z[next*p.Cols:(next+rows)*p.Cols], c.GetData()); err != nil {
				return nil, fmt.Errorf("modeler: projection chunk at row %d: %w", next, err)
			}
			sum.Write(c.GetData())
			next += rows
		case *curatorv1.ReleaseProjectionResponse_Trailer:
			if next != p.Rows {
				return nil, fmt.Errorf("modeler: projection stream ended after %d of %d rows", next, p.Rows)
			}
			if string(sum.Sum(nil)) != string(part.Trailer.GetSha256()) {
				return nil, errors.New("modeler: projection checksum mismatch; the matrix was damaged in transit")
			}
			return p, nil
		default:
			return nil, errors.New("modeler: unexpected message in projection stream")
		}
	}
}
