// Package tuning runs private hyperparameter tuning on the curator's own data: it is the
// jobspec.Runner behind the curator's job RPCs. It turns a job spec into a grid Λ
// (package hparam), an objective over the curator's validation split (package learner, or
// an operator-configured external evaluator), and one of the private search algorithms:
// Kusner et al. (package kusner) or DP-HyPO (package dphypo).
//
// Data: the served dataset's target must be a class label, whose number of classes K is
// public: 0/1 (two classes, the default), or integers 0 … K−1 with K declared by the
// operator (Config.Classes) or by the public schema's line for the target (its
// categories, or bounds [0, K−1]). The built-in learner is logistic regression for two classes and
// multinomial (softmax) regression for more (package learner). The operator fixes the split
// into a training part and a validation part (a fraction and a seed); the modeler cannot
// choose it. What each job protects, and how its features are prepared, differ:
//
//   - Kusner jobs (Kusner et al. 2015) protect the validation part only, under replacing
//     one validation record (privacy.RelationValidationRecord): the learner is trained on
//     the training part without any privacy mechanism, as in the paper's setting, and
//     every Kusner guarantee text says so. Features are standardised with statistics of
//     the training part only, so the validation records do not shape the scaling; for
//     Algorithm 3 the rows are then put on norm ≤ 1, as its Lipschitz bounds require.
//   - DP-HyPO jobs (Wang et al. 2023) with the built-in DP-SGD learner protect the
//     training part under adding or removing one record (privacy.RelationTrainingAddRemove;
//     the noisy validation accuracy is composed in, so replacing one validation record is
//     covered too). DP-SGD's accounting holds for the rows it is given, so the features
//     are prepared without any statistic of the data (Preprocessing, default
//     PreprocessBounded): clamped to per-feature bounds — the operator's public
//     Config.FeatureBounds in the raw units of the dataset's columns, or else a private
//     estimate from the training part whose ε is added to the job's cost — mapped onto
//     [−1, 1] and clipped to row norm ≤ Config.RowNorm (max(1, √d/2)). The earlier standardisation
//     with the training rows' own statistics is kept only as the explicit operator
//     option PreprocessStandardiseNonprivate, whose jobs' guarantee texts say the claim
//     does not hold. Runner.Relation names each job's relation.
//
// Nothing computed from the validation data leaves a job except its released result:
// progress carries step counts, and errors that reach the modeler name only the spec or
// the operator's configuration.
package tuning

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
	"github.com/privbo/privbo/pkg/evaluator"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/learner"
)

// Evaluator is an operator-configured external program that scores one hyperparameter
// setting. For DP-HyPO it must declare its per-run guarantee: pure ε-DP (Epsilon > 0)
// or a Rényi-DP curve (RDP).
type Evaluator struct {
	Name    string
	Command []string
	Timeout time.Duration
	// Epsilon is the program's declared per-run pure-DP guarantee (0: undeclared; such an
	// evaluator can serve Kusner jobs, whose privacy comes from the release mechanism,
	// but not DP-HyPO, whose privacy composes the runs' own guarantees).
	Epsilon float64
	// RDP is the program's declared per-run Rényi-DP curve (nil: undeclared).
	RDP *dp.RDPCurve
	// Relation is the neighbour relation the declared per-run guarantee is stated for,
	// and so that of a DP-HyPO job over this evaluator; empty means
	// privacy.RelationTrainingAddRemove (DP-HyPO's setting: each run trains with DP-SGD).
	// Kusner jobs over the evaluator are stated for privacy.RelationValidationRecord
	// whatever this says.
	Relation privacy.Relation
}

// KusnerAssumptions are the constants Kusner et al.'s guarantees rest on. They are claims
// about the curator's data and learner — how close the validation gains of neighbouring
// validation sets are (k1, Assumption 1), the observation noise σ², a bound γ_T on the
// information gain, and Algorithm 2's regret constants A and τ — and they set how much
// noise a release gets. So the curator's operator sets them, never the modeler: a job
// spec may leave them unset or repeat the operator's values, and is refused otherwise.
type KusnerAssumptions struct {
	// K1 ∈ [0, 1): k1(V, V'). 0, the default, is the most conservative.
	K1 float64
	// NoiseVariance σ² of Algorithm 1's observations; default 0.01.
	NoiseVariance float64
	// GammaT > 0 replaces the greedy upper bound on γ_T (0: use the bound).
	GammaT float64
	// A, Tau > 0 enable Algorithm 2 (de Freitas et al. 2012); unset, it is refused.
	A, Tau float64
}

// Config configures the Runner.
type Config struct {
	Dataset *dataset.Dataset
	// Kusner holds the operator's assumptions for Kusner jobs.
	Kusner KusnerAssumptions
	// ValidationFraction of the rows form the sensitive validation part (default 0.3);
	// SplitSeed fixes which (operator configuration, not a privacy secret).
	ValidationFraction float64
	SplitSeed          uint64
	Evaluators         []Evaluator
	// MaxGrid bounds |Λ| (default 5,000); MaxIterations bounds T and DP-HyPO's expected
	// number of runs (default 500). Planning a Kusner job computes a greedy bound on γ_T
	// in O(T·|Λ|·(dim + T)) inside the submitting RPC; these caps keep that to seconds.
	MaxGrid, MaxIterations int
	// Classes is the public number of classes K of the target's labels (integers
	// 0 … K−1); 0 takes it from the dataset's schema (a target line with bounds
	// [0, K−1]), or else 2 (0/1 labels). It must not be counted from the data: the
	// learner's shape depends on it.
	Classes int
	// Preprocessing of the built-in DP-SGD learner's features for DP-HyPO jobs; the zero
	// value is PreprocessBounded.
	Preprocessing Preprocessing
	// FeatureBounds are public per-feature bounds, one per feature in the dataset's
	// feature order, in the raw units of its columns (before the dataset's own scaling).
	// They must come from outside the data: the operator's domain knowledge, documented
	// measurement ranges. With PreprocessBounded and no FeatureBounds, the bounds are
	// estimated privately with EstimateBounds; with neither, DP-HyPO jobs with the
	// built-in learner are refused.
	FeatureBounds []learner.Bounds
	// RowNorm is the public Euclidean norm bound rows are clipped to after the map onto
	// [−1, 1]; 0 means learner.BoundedRowNorm(d) = max(1, √d/2) for d features.
	RowNorm float64
	// EstimateBounds estimates the bounds privately from the training part when
	// FeatureBounds is nil (dataset.EstimateBounds, say), for each DP-HyPO job with the
	// built-in learner; BoundsEpsilon > 0 is its ε, added to each such job's cost.
	EstimateBounds BoundsEstimator
	BoundsEpsilon  float64
	// FeatureBoundsEpsilon > 0 says that FeatureBounds are not public but the
	// curator's own private estimate for its scaling (its --scaling private), made
	// once for the dataset with this ε under the record relation and charged there,
	// not to each job: the guarantee texts say so.
	FeatureBoundsEpsilon float64
	// TrainingConsented is the operator's declaration that every patient of the
	// training part consented to their records being used without a privacy
	// guarantee (or that the part is public). Kusner jobs train on it with no
	// mechanism, so their whole-patient figure (jobspec.Plan.Patient) is not bounded
	// without it, and their validation part's (ε, δ) with it.
	TrainingConsented bool
	Logger            *zap.Logger

	// scoreRatio overrides CalibratedScoreRatio in this package's experiments.
	scoreRatio float64
}

// Runner implements jobspec.Runner.
type Runner struct {
	cfg        Config
	log        *zap.Logger
	train, val learner.Data // standardised with training statistics (Kusner)
	// trainUnit, valUnit: rows on norm ≤ 1 (Kusner Algorithm 3).
	trainUnit, valUnit learner.Data
	// rawTrain, rawVal: the same split in the raw units of the dataset's columns.
	rawTrain, rawVal learner.Data
	// sgdTrain, sgdVal: the DP-SGD learner's data, when its preprocessing is fixed
	// (public bounds, or standardise-nonprivate); with estimated bounds, sgdData
	// prepares them per job.
	sgdTrain, sgdVal learner.Data
	// boundsRows is the number of rows a BoundsEstimator is given (see fixedRows).
	boundsRows int
	evaluators map[string]*evaluatorEntry
}

type evaluatorEntry struct {
	cfg  Evaluator
	prog *evaluator.Program
}

// New splits the data and checks the evaluators.
func New(cfg Config) (*Runner, error) {
	if cfg.Dataset == nil {
		return nil, errors.New("tuning: a dataset is required")
	}
	if cfg.ValidationFraction == 0 {
		cfg.ValidationFraction = 0.3
	}
	if cfg.MaxGrid <= 0 {
		cfg.MaxGrid = 5000
	}
	if cfg.MaxIterations <= 0 {
		cfg.MaxIterations = 500
	}
	if cfg.Kusner.NoiseVariance == 0 {
		cfg.Kusner.NoiseVariance = 0.01
	}
	if k := cfg.Kusner; !(k.K1 >= 0 && k.K1 < 1) || !(k.NoiseVariance > 0) || math.IsInf(k.NoiseVariance, 0) || k.GammaT < 0 || k.A < 0 || k.Tau < 0 {
		return nil, fmt.Errorf("tuning: Kusner assumptions out of range: k1 must be in [0, 1), σ² positive, γ_T, A and τ non-negative (got %+v)", k)
	}
	if cfg.Logger == nil {
		cfg.Logger = zap.NewNop()
	}
	ds := cfg.Dataset
	if err := checkPreprocessing(&cfg, ds.D); err != nil {
		return nil, err
	}
	classes, from := targetClasses(cfg.Classes, ds)
	all, err := learner.NewClassData(rawFeatures(ds), ds.Y, ds.N, ds.D, classes)
	if err != nil {
		return nil, fmt.Errorf("tuning: jobs need class labels as the target column %q, here %d classes (%s), labels 0 … %d: %w", ds.Target, classes, from, classes-1, err)
	}
	train, val, err := learner.SplitRandom(all, cfg.ValidationFraction, cfg.SplitSeed)
	if err != nil {
		return nil, fmt.Errorf("tuning: %w", err)
	}
	st := learner.FitStandardiser(train)
	r := &Runner{cfg: cfg, log: cfg.Logger, train: st.Apply(train), val: st.Apply(val), rawTrain: train, rawVal: val,
		boundsRows: train.N, evaluators: map[string]*evaluatorEntry{}}
	if src := r.boundsSource(); src == boundsStandardise || src == boundsPublic {
		if r.sgdTrain, r.sgdVal, err = prepareSGD(cfg.Preprocessing, cfg.FeatureBounds, cfg.RowNorm, train, val); err != nil {
			return nil, err
		}
	}
	// Unit norm: divide by the largest training-row norm (the training part is not
	// sensitive), then clip, so every row — validation included — has norm ≤ 1.
	maxNorm := 0.0
	for i := 0; i < r.train.N; i++ {
		maxNorm = max(maxNorm, norm(r.train.Row(i)))
	}
	r.trainUnit, r.valUnit = r.train, r.val
	if maxNorm > 0 {
		r.trainUnit, r.valUnit = scaleRows(r.train, 1/maxNorm), scaleRows(r.val, 1/maxNorm)
	}
	r.trainUnit, r.valUnit = learner.ClipRows(r.trainUnit, 1), learner.ClipRows(r.valUnit, 1)
	for _, e := range cfg.Evaluators {
		if _, dup := r.evaluators[e.Name]; dup || e.Name == "" {
			return nil, fmt.Errorf("tuning: evaluator names must be unique and non-empty (%q)", e.Name)
		}
		if e.Relation == "" {
			e.Relation = privacy.RelationTrainingAddRemove
		}
		if err := e.Relation.Validate(); err != nil {
			return nil, fmt.Errorf("tuning: evaluator %q: %w", e.Name, err)
		}
		prog, err := evaluator.New(evaluator.Config{Command: e.Command, Timeout: e.Timeout})
		if err != nil {
			return nil, fmt.Errorf("tuning: evaluator %q: %w", e.Name, err)
		}
		r.evaluators[e.Name] = &evaluatorEntry{cfg: e, prog: prog}
	}
	return r, nil
}

// targetClasses returns the public number of classes of ds's target and where it comes
// from: the operator's setting, the schema's categories of the target (read as their
// indices), the schema's bounds for the target ([0, K−1] with K − 1 a positive
// integer), or the binary default. Nothing is counted from the data.
func targetClasses(configured int, ds *dataset.Dataset) (int, string) {
	if configured > 0 {
		return configured, "set by the operator"
	}
	if k := len(ds.TargetCategories); k > 0 {
		return k, "the schema's categories of the target"
	}
	if sch := ds.Scaling.Schema; sch != nil {
		if c, ok := sch.Column(ds.Target); ok && c.HasBounds && c.Lower == 0 && c.Upper >= 1 &&
			c.Upper == math.Trunc(c.Upper) && c.Upper < learner.MaxClasses {
			return int(c.Upper) + 1, "from the schema's target bounds [0, K−1]"
		}
	}
	return 2, "the default: 0/1 labels"
}

// Classes returns the number of classes K of the jobs' target (2: binary).
func (r *Runner) Classes() int { return r.rawTrain.NumClasses() }

func norm(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

func scaleRows(d learner.Data, k float64) learner.Data {
	x := make([]float64, len(d.X))
	for i, v := range d.X {
		x[i] = v * k
	}
	out, err := learner.NewClassData(x, d.Y, d.N, d.D, d.NumClasses())
	if err != nil {
		panic(fmt.Sprintf("tuning: rescaling valid data: %v", err))
	}
	return out
}

// space builds Λ from the spec's axes.
func (r *Runner) space(axes []hparam.Axis) (hparam.Space, error) {
	if len(axes) == 0 {
		return hparam.Space{}, invalid("the hyperparameter grid is empty")
	}
	s, err := hparam.SpaceOf(axes...)
	if err != nil {
		return hparam.Space{}, invalid("%v", err)
	}
	if s.Size() > r.cfg.MaxGrid {
		return hparam.Space{}, invalid("the grid has %d points; this curator allows at most %d", s.Size(), r.cfg.MaxGrid)
	}
	return s, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", jobspec.ErrInvalidSpec, fmt.Sprintf(format, args...))
}

func (r *Runner) evaluator(name string) (*evaluatorEntry, error) {
	e, ok := r.evaluators[name]
	if !ok {
		return nil, invalid("no evaluator named %q is configured on this curator", name)
	}
	return e, nil
}

// evaluate runs an external evaluator on one grid point. Its failures reach the modeler
// only as their kind; stderr and the output stay in the operator's log.
func (r *Runner) evaluate(ctx context.Context, e *evaluatorEntry, point map[string]float64) (float64, error) {
	v, err := e.prog.Evaluate(ctx, map[string]any{"hyperparameters": point})
	if err == nil {
		return v, nil
	}
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	r.log.Error("external evaluator failed", zap.String("evaluator", e.cfg.Name), zap.Error(err))
	switch {
	case errors.Is(err, evaluator.ErrTimeout):
		return 0, jobspec.Publicf("evaluator %q timed out after %s", e.cfg.Name, e.cfg.Timeout)
	case errors.Is(err, evaluator.ErrBadOutput):
		return 0, jobspec.Publicf("evaluator %q did not print a valid score", e.cfg.Name)
	case errors.Is(err, evaluator.ErrExit):
		return 0, jobspec.Publicf("evaluator %q exited with an error", e.cfg.Name)
	}
	return 0, jobspec.Publicf("evaluator %q failed", e.cfg.Name)
}

// kindRunner is how the Runner plans and runs jobs of one kind (kusner.go, dphypo.go).
type kindRunner struct {
	// plan validates the spec and prices it, without the data.
	plan func(r *Runner, s jobspec.Spec) (jobspec.Plan, error)
	// relation is the neighbour relation the job's guarantee is stated for.
	relation func(r *Runner, s jobspec.Spec) (privacy.Relation, error)
	run      func(r *Runner, ctx context.Context, s jobspec.Spec, progress func(jobspec.Progress)) (jobspec.Result, error)
}

// runners are the Runner's steps for each registered job kind.
var runners = map[jobspec.Kind]kindRunner{jobspec.KusnerKind: kusnerRunner, jobspec.DPHyPOKind: dphypoRunner}

// runnerOf returns the steps for spec's kind.
func runnerOf(spec jobspec.Spec) (kindRunner, error) {
	if k, ok := runners[jobspec.KindOf(spec)]; ok {
		return k, nil
	}
	return kindRunner{}, invalid("a job spec needs exactly one job kind")
}

// Plan implements jobspec.Runner.
func (r *Runner) Plan(spec jobspec.Spec) (jobspec.Plan, error) {
	k, err := runnerOf(spec)
	if err != nil {
		return jobspec.Plan{}, err
	}
	plan, err := k.plan(r, spec)
	if err != nil {
		return plan, err
	}
	// The charge is made under the relation the guarantee text states.
	plan.Relation, err = k.relation(r, spec)
	return plan, err
}

// Relation returns the neighbour relation spec's guarantee (and so its charge) is stated
// for, by the privacy ledger's names: Kusner jobs kusner.Relation (one validation record
// replaced), DP-HyPO jobs with the built-in learner privacy.RelationTrainingAddRemove,
// DP-HyPO jobs over an external evaluator the relation its operator declared
// (Evaluator.Relation). It does not validate the rest of spec.
func (r *Runner) Relation(spec jobspec.Spec) (privacy.Relation, error) {
	k, err := runnerOf(spec)
	if err != nil {
		return "", err
	}
	return k.relation(r, spec)
}

// Run implements jobspec.Runner.
func (r *Runner) Run(ctx context.Context, spec jobspec.Spec, progress func(jobspec.Progress)) (jobspec.Result, error) {
	k, err := runnerOf(spec)
	if err != nil {
		return jobspec.Result{}, err
	}
	return k.run(r, ctx, spec, progress)
}
