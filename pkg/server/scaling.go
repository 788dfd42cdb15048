package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
)

// DefaultPrivateScalingShare is the default Config.PrivateScalingShare: the fraction
// of the per-identity budget ε spent, once, on the private scaling estimate.
const DefaultPrivateScalingShare = 0.1

// ScalingEstimateKind is the ledger kind of the private scaling estimate, charged under
// the curator's own identity (curator.CuratorIdentity) and ledger.RelationRecord.
const ScalingEstimateKind = ledger.KindScalingEstimate

// scalingPlan says what Start must estimate privately before it can scale the dataset
// and answer privately, and with which ε and δ (record replacement,
// ledger.RelationRecord).
type scalingPlan struct {
	features bool    // estimate the feature bounds (scaling mode private without bounds)
	target   bool    // estimate the target's range (private outputs, no range declared)
	epsF     float64 // ε of the feature bounds; 0 unless features
	epsT     float64 // ε of the target's range; 0 unless target
	delta    float64 // δ of the whole estimate; 0 makes it pure ε-DP
	share    float64 // Config.PrivateScalingShare, for the key
}

// privacy is the privacy of the whole estimate: the feature bounds and the target's
// range are one release (dataset.EstimateBoundsWith over all their columns).
func (p scalingPlan) privacy() dataset.BoundsPrivacy {
	return dataset.BoundsPrivacy{Epsilon: p.total(), Delta: p.delta}
}

// columns is the number of columns the estimate covers.
func (p scalingPlan) columns(raw *dataset.Raw) int {
	c := 0
	if p.features {
		c += raw.D
	}
	if p.target {
		c++
	}
	return c
}

// total is the ε of the whole estimate, which covers the feature bounds and the
// target's range in one release.
func (p scalingPlan) total() float64 { return p.epsF + p.epsT }

func (p scalingPlan) needed() bool { return p.features || p.target }

// outputRangeDeclared reports whether the operator gave the target's range in flags.
func outputRangeDeclared(o curator.OutputPrivacy) bool { return o.Lower != 0 || o.Upper != 0 }

// planScaling decides what to estimate. The ε of the estimate is
// ε_s = PrivateScalingShare × Budget.Epsilon; when both the feature bounds and the
// target's range are estimated, the features get d/(d+1) of it and the target
// 1/(d+1) (what each column costs is the same then; the whole is one release of
// ε_s). An explicit "private:EPS" fixes the features' ε to EPS instead, and the
// target, when estimated too, gets EPS/d (the same split). The δ of the estimate is
// δ_s = PrivateScalingShare × min(Budget.Delta, DatasetBudget.Delta), the same share
// of the δ that both limits it is charged to allow; with a δ budget of 0 the estimate
// is pure ε-DP (discrete Laplace noise, much coarser).
func planScaling(cfg Config, raw *dataset.Raw) scalingPlan {
	sc := cfg.Data.Scaling
	p := scalingPlan{share: cfg.PrivateScalingShare}
	p.features = sc.Mode == dataset.ScalePrivate && sc.Schema == nil
	p.target = !answer.IsExact(cfg.Output.Mechanism) && !outputRangeDeclared(cfg.Output) && schemaTargetRange(sc, raw.Target) == nil
	if p.needed() {
		p.delta = cfg.PrivateScalingShare * min(cfg.Budget.Delta, cfg.DatasetBudget.Delta)
	}
	d := float64(raw.D)
	epsS := cfg.PrivateScalingShare * cfg.Budget.Epsilon
	switch {
	case p.features && sc.Epsilon > 0:
		p.epsF = sc.Epsilon
		if p.target {
			p.epsT = sc.Epsilon / d
		}
	case p.features && p.target:
		p.epsF, p.epsT = epsS*d/(d+1), epsS/(d+1)
	case p.features:
		p.epsF = epsS
	case p.target:
		p.epsT = epsS
	}
	return p
}

// schemaTargetRange is the target's range from the public schema of sc (schema mode,
// or private mode with bounds given in code), nil if it has none.
func schemaTargetRange(sc dataset.Scaling, target string) *dataset.Bounds {
	if sc.Schema == nil || (sc.Mode != dataset.ScaleSchema && sc.Mode != dataset.ScalePrivate) {
		return nil
	}
	if c, ok := sc.Schema.Column(target); ok && c.HasBounds {
		return &dataset.Bounds{Lower: c.Lower, Upper: c.Upper}
	} else if ok && len(c.Categories) > 1 { // a class label, read as its index 0 … K−1
		return &dataset.Bounds{Lower: 0, Upper: float64(len(c.Categories) - 1)}
	}
	return nil
}

// scalingEstimate is the stored result of the private scaling estimate (the ledger
// record's Result): bounds estimated with differential privacy, safe for the
// operator, never sent to modelers.
type scalingEstimate struct {
	Features []columnBounds `json:"features,omitempty"`
	Target   *columnBounds  `json:"target,omitempty"`
}

type columnBounds struct {
	Column string  `json:"column"`
	Lower  float64 `json:"lower"`
	Upper  float64 `json:"upper"`
}

// scalingKey derives the ledger key of the estimate from its public parameters only,
// so that a restart with the same settings finds (and reuses) the same release, and
// any change of them is a new release with a new charge. The estimator's name
// (dataset.BoundsEstimator) is one of them: an estimate stored by another algorithm
// (the exponential mechanism over a grid, before it) is never read as this one's.
func scalingKey(p scalingPlan, sc dataset.Scaling, raw *dataset.Raw) string {
	return scalingKeyOf(p, sc, raw, dataset.BoundsEstimator)
}

// scalingKeyOf is scalingKey for the named estimator.
func scalingKeyOf(p scalingPlan, sc dataset.Scaling, raw *dataset.Raw, estimator string) string {
	params := struct {
		Share, EpsFeatures, EpsTarget float64
		Delta                         float64
		Clip, Unit                    float64
		Features                      []string
		Target                        string
		EstimateFeatures              bool
		EstimateTarget                bool
		Estimator                     string
	}{p.share, p.epsF, p.epsT, p.delta, orDefault(sc.ClipNorm, dataset.DefaultClipNorm), orDefault(sc.Unit, dataset.DefaultUnit),
		raw.Features, raw.Target, p.features, p.target, estimator}
	b, _ := json.Marshal(params) // cannot fail: plain fields, finite floats
	h := sha256.Sum256(b)
	return ScalingEstimateKind + "/" + hex.EncodeToString(h[:16])
}

func orDefault(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// privateScaling estimates what p asks for, or reuses the estimate the ledger holds for
// the same public parameters. A new estimate is charged durably to the ledger, under
// the curator's own identity and ledger.RelationRecord (dataset.EstimateBoundsWith is
// (ε, δ)-DP under the replacement of one record), with the bounds as the record's
// result, in the same transaction: nothing of it is used before the charge commits,
// and if another curator process charged the same key first its stored bounds are
// used. Repeating the release costs nothing: a restart reads the stored bounds and
// charges nothing.
//
// The charge spends the dataset cap (Config.DatasetBudget), which all identities
// share; it also has to fit the per-identity limit of the curator's identity, which it
// does whenever the share is below 1.
func privateScaling(ctx context.Context, store curator.Ledger, cfg Config, raw *dataset.Raw, p scalingPlan, log *zap.Logger) (scalingEstimate, error) {
	acct := ledger.Account{Dataset: cfg.DatasetID, Identity: curator.CuratorIdentity}
	key := scalingKey(p, cfg.Data.Scaling, raw)
	decode := func(rec ledger.Receipt) (scalingEstimate, error) {
		var est scalingEstimate
		if err := json.Unmarshal(rec.Result, &est); err != nil {
			return est, fmt.Errorf("server: the ledger's scaling estimate %s cannot be read: %w", key, err)
		}
		if err := est.check(raw, p); err != nil {
			return est, fmt.Errorf("server: the ledger's scaling estimate %s: %w", key, err)
		}
		return est, nil
	}
	logEst := func(est scalingEstimate, replayed bool) {
		b, _ := json.Marshal(est)
		log.Info("private scaling estimate (differentially private; for the operator only)", zap.String("key", key), zap.Bool("reused", replayed),
			zap.Float64("epsilon_features", p.epsF), zap.Float64("epsilon_target", p.epsT), zap.Float64("delta", p.delta), zap.String("bounds", string(b)))
	}
	if rec, ok, err := store.Get(ctx, acct, key); err != nil {
		return scalingEstimate{}, fmt.Errorf("server: reading the scaling estimate from the ledger: %w", err)
	} else if ok {
		est, err := decode(rec)
		if err == nil {
			logEst(est, true)
		}
		return est, err
	}
	// The columns of the one release: the features, then the target.
	var names []string
	if p.features {
		names = append(names, raw.Features...)
	}
	if p.target {
		names = append(names, raw.Target)
	}
	d := len(names)
	x := make([]float64, 0, raw.N*d)
	for i := range raw.N {
		if p.features {
			x = append(x, raw.X[i*raw.D:(i+1)*raw.D]...)
		}
		if p.target {
			x = append(x, raw.Y[i])
		}
	}
	b, err := dataset.EstimateBoundsWith(x, raw.N, d, p.privacy(), dp.CryptoSource())
	if err != nil {
		return scalingEstimate{}, fmt.Errorf("server: %w", err)
	}
	var est scalingEstimate
	for j, name := range names {
		cb := columnBounds{Column: name, Lower: b[j].Lower, Upper: b[j].Upper}
		if p.target && j == d-1 {
			est.Target = &cb
		} else {
			est.Features = append(est.Features, cb)
		}
	}
	result, err := json.Marshal(est)
	if err != nil {
		return scalingEstimate{}, fmt.Errorf("server: %w", err)
	}
	rec, err := store.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: ScalingEstimateKind, Relation: ledger.RelationRecord,
		Cost: ledger.Cost{Epsilon: p.total(), Delta: p.delta}, Result: result, Description: p.describe(raw)})
	if err != nil {
		// Uncharged, so never returned: the caller gets no bounds to use by mistake.
		if be := (*ledger.BudgetError)(nil); errors.As(err, &be) {
			return scalingEstimate{}, fmt.Errorf("server: the private scaling estimate needs ε = %g, δ = %g (record replacement) from the dataset's budget, which is shared by all identities, "+
				"but the ledger refused it (%s cap: ε %g, δ %g left): raise Config.DatasetBudget.Epsilon and Config.DatasetBudget.Delta (or Config.Budget.Epsilon and Config.Budget.Delta, "+
				"their defaults), lower Config.PrivateScalingShare, "+
				"or give public bounds and the target's range in a schema, Config.Data.Scaling.Schema (and Config.Output.Lower/Config.Output.Upper): %w",
				p.total(), p.delta, be.Scope, be.Remaining.Epsilon, be.Remaining.Delta, err)
		}
		return scalingEstimate{}, fmt.Errorf("server: charging the private scaling estimate: %w", err)
	}
	if rec.Replayed { // another process charged the same release first: use its bounds
		est, err = decode(rec)
		if err != nil {
			return est, err
		}
	}
	logEst(est, rec.Replayed)
	return est, nil
}

// answerRange is the range [lo, hi] the answers use when it was estimated privately:
// rounded outward to four significant digits of its width, lo down and hi up to a
// multiple of s = 10^(⌊log₁₀(hi − lo)⌋ − 3), except that a bound within s/2 of zero is
// zero. The estimator's bounds are edges of its bins, which print as float noise — its
// zero bin ends at ±2⁻²⁰ ≈ 9.5e-7 (dataset.EstimateBoundsWith), so a non-negative
// target's estimate starts at −9.5367431640625e-07 — and the range is stated in every
// answer's guarantee, where a reader should see the bound the mechanism clips to, not
// float noise. Rounding is post-processing of the private estimate (it costs nothing),
// and the answers are clipped to the rounded range itself, so the range stated is the
// range used. It moves a bound by less than s ≤ (hi − lo)/1000; a range it cannot
// improve (not finite, empty) is returned as it is.
func answerRange(lo, hi float64) (float64, float64) {
	w := hi - lo
	if !(w > 0) || math.IsInf(w, 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return lo, hi
	}
	e := int(math.Floor(math.Log10(w))) - 3 // s = 10^e
	s := math.Pow(10, float64(e))
	at := func(k float64) float64 {
		// k·10^e parsed from its decimal, so that 3767 × 0.1 is 376.7, not 376.70000000000005.
		v, err := strconv.ParseFloat(strconv.FormatFloat(k, 'f', 0, 64)+"e"+strconv.Itoa(e), 64)
		if err != nil {
			return k * s
		}
		return v
	}
	rlo, rhi := at(math.Floor(lo/s)), at(math.Ceil(hi/s))
	if math.Abs(lo) < s/2 {
		rlo = 0
	}
	if math.Abs(hi) < s/2 {
		rhi = 0
	}
	if !(rlo < rhi) || math.IsInf(rlo, 0) || math.IsInf(rhi, 0) {
		return lo, hi
	}
	return rlo, rhi
}

// describe is the ledger record's description: what was estimated, with which ε and δ.
func (p scalingPlan) describe(raw *dataset.Raw) string {
	var parts []string
	if p.features {
		parts = append(parts, fmt.Sprintf("bounds of %d feature columns (ε=%g of it)", raw.D, p.epsF))
	}
	if p.target {
		parts = append(parts, fmt.Sprintf("the range of target %s (ε=%g of it)", raw.Target, p.epsT))
	}
	mech := "noisy log-histograms, discrete Gaussian noise, zCDP"
	if p.delta == 0 {
		mech = "noisy log-histograms, discrete Laplace noise"
	}
	return "private scaling estimate (" + mech + ", record replacement; share " +
		strconv.FormatFloat(p.share, 'g', -1, 64) + " of the budget): " + strings.Join(parts, " and ") + ", one release of " + p.privacy().String()
}

// check verifies that a stored estimate covers what p needs of raw.
func (e scalingEstimate) check(raw *dataset.Raw, p scalingPlan) error {
	ok := func(b columnBounds) bool {
		return !math.IsNaN(b.Lower) && !math.IsInf(b.Lower, 0) && !math.IsNaN(b.Upper) && !math.IsInf(b.Upper, 0) && b.Lower < b.Upper
	}
	if p.features {
		if len(e.Features) != raw.D {
			return fmt.Errorf("holds %d feature bounds, want %d", len(e.Features), raw.D)
		}
		for j, b := range e.Features {
			if b.Column != raw.Features[j] || !ok(b) {
				return fmt.Errorf("feature bounds %d do not fit column %q", j, raw.Features[j])
			}
		}
	}
	if p.target && (e.Target == nil || e.Target.Column != raw.Target || !ok(*e.Target)) {
		return fmt.Errorf("holds no valid range for target %q", raw.Target)
	}
	return nil
}

// applyEstimate puts the estimate into the scaling: the feature bounds as the private
// mode's schema, with the target's range on its own line when it was estimated.
func applyEstimate(sc dataset.Scaling, p scalingPlan, est scalingEstimate) dataset.Scaling {
	if !p.features {
		return sc
	}
	var names []string
	var bounds []dataset.Bounds
	for _, b := range est.Features {
		names = append(names, b.Column)
		bounds = append(bounds, dataset.Bounds{Lower: b.Lower, Upper: b.Upper})
	}
	if est.Target != nil {
		names = append(names, est.Target.Column)
		bounds = append(bounds, dataset.Bounds{Lower: est.Target.Lower, Upper: est.Target.Upper})
		sc.TargetEpsilon = p.epsT
	}
	sc.Epsilon, sc.Delta = p.epsF, p.delta
	sc.Schema = dataset.SchemaFromBounds(fmt.Sprintf("(bounds estimated with %s)", p.privacy()), slices.Clone(names), bounds)
	return sc
}

// resolveOutputRange fills the target's range of private outputs: the operator's
// Output.Lower/Upper first, then the schema's line for the target, then the
// private estimate. It fails, naming all three ways, when none is available.
func resolveOutputRange(cfg *Config, ds *dataset.Dataset, est scalingEstimate) error {
	o := &cfg.Output
	if answer.IsExact(o.Mechanism) || outputRangeDeclared(*o) {
		return nil
	}
	switch {
	case schemaTargetRange(ds.Scaling, ds.Target) != nil && ds.Scaling.Mode == dataset.ScaleSchema:
		r := schemaTargetRange(ds.Scaling, ds.Target)
		o.Lower, o.Upper = r.Lower, r.Upper
	case est.Target != nil:
		o.Lower, o.Upper = est.Target.Lower, est.Target.Upper
	case ds.TargetRange != nil:
		o.Lower, o.Upper = ds.TargetRange.Lower, ds.TargetRange.Upper
	default:
		return errNoOutputRange(o.Mechanism)
	}
	return nil
}

func errNoOutputRange(mech string) error {
	return fmt.Errorf("server: output privacy %s needs the range of the target (answers are clipped to it and the noise is calibrated to its width): "+
		"set Config.Output.Lower and Config.Output.Upper, or give it on the target's line of the schema, Config.Data.Scaling.Schema, or let the curator "+
		"estimate it privately (with Config.PrivateScalingShare of the budget); or choose Config.Output.Mechanism none explicitly to release exact, unprotected answers", mech)
}

// what names what p estimates, for messages.
func (p scalingPlan) what() string {
	switch {
	case p.features && p.target:
		return "the feature bounds and the target's range"
	case p.features:
		return "the feature bounds"
	}
	return "the target's range"
}

// checkPlan makes the checks Start and Check share before anything is charged: the
// target's range of private answers must be declared when the operator gave a public
// scaling (a schema without the target's line is a mistake, not a request to spend ε
// on it) unless Config.EstimateTargetRange asks for the estimate; and the forecast of
// the estimate (dataset.ForecastBounds, from n, the number of columns and its ε and δ
// only) must not be poor. A coarse forecast is returned as a warning, with the schema
// lines that would replace the estimate.
func checkPlan(cfg Config, raw *dataset.Raw, p scalingPlan) (warnings []string, err error) {
	if p.target && !p.features && !cfg.EstimateTargetRange {
		return nil, errTargetRangeMissing(cfg, raw, p)
	}
	if !p.needed() {
		return nil, nil
	}
	f, err := dataset.ForecastBounds(raw.N, p.columns(raw), p.privacy())
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	switch f.Quality {
	case dataset.BoundsPoor:
		return nil, fieldError("PrivateScalingShare", fmt.Sprintf("the private estimate of %s would be poor, so it is not made: %s. "+
			"It would spend %s of the dataset's budget and locate little of the data. %s",
			p.what(), f, p.privacy(), remedies(cfg, raw, p, f)))
	case dataset.BoundsCoarse:
		return []string{fmt.Sprintf("WARNING: the private estimate of %s will be coarse (it is made, once, at the first start): %s. Expect intervals up to about 4× the width of a column's "+
			"1st–99th percentile range, and up to a tenth of a column's rows clamped (more for heavy-tailed, zero-centred or narrowly "+
			"concentrated columns); the scaled features keep less of their signal and the answers' range is wider than the target's. %s",
			p.what(), f, remedies(cfg, raw, p, f))}, nil
	}
	return nil, nil
}

// remedies says how to do better than forecast f: public bounds in a schema (the lines
// to write) or a larger share of the budget.
func remedies(cfg Config, raw *dataset.Raw, p scalingPlan, f dataset.BoundsForecast) string {
	var lines []string
	if p.features {
		for _, c := range raw.Features {
			lines = append(lines, c+",LOWER,UPPER")
		}
	}
	if p.target {
		lines = append(lines, raw.Target+",LOWER,UPPER")
	}
	where := "a schema file (Config.Data.Scaling.Schema)"
	if p.target && !p.features {
		where = "the schema"
		if sch := cfg.Data.Scaling.Schema; sch != nil && sch.File != "" {
			where += " " + sch.File
		}
		where += " (or Config.Output.Lower and Config.Output.Upper)"
	}
	msg := fmt.Sprintf("Public bounds cost no privacy and fit better: give them in %s, a CSV with the header line column,lower,upper and one line per column, "+
		"each column's public range (what its values can be, not read from the data):\n  column,lower,upper\n  %s\n", where, strings.Join(lines, "\n  "))
	var need []string
	if f.Quality == dataset.BoundsPoor {
		need = append(need, spend(cfg, "a coarse", f.EpsilonFor(dataset.BoundsCoarse)))
	}
	need = append(need, spend(cfg, "a good", f.EpsilonFor(dataset.BoundsGood)))
	return msg + "Or spend more on the estimate: " + strings.Join(need, "; ") + "."
}

// spend says what ε an estimate of some quality needs and, when the budget allows it,
// the Config.PrivateScalingShare that gives it.
func spend(cfg Config, what string, eps float64) string {
	if math.IsInf(eps, 1) {
		return what + " one needs ε above 10⁴"
	}
	s := fmt.Sprintf("%s one needs ε ≥ %.3g", what, eps)
	if share := eps / cfg.Budget.Epsilon; share < 1 {
		return s + fmt.Sprintf(" (Config.PrivateScalingShare ≥ %.2g of Config.Budget.Epsilon %g)", math.Ceil(share*100)/100, cfg.Budget.Epsilon)
	}
	return s + fmt.Sprintf(", more than Config.Budget.Epsilon %g lets the share reach", cfg.Budget.Epsilon)
}

// errTargetRangeMissing is the refusal of a public scaling without the target's range.
func errTargetRangeMissing(cfg Config, raw *dataset.Raw, p scalingPlan) error {
	sc := cfg.Data.Scaling
	what := "scaling " + string(sc.Mode) + " gives none"
	fix := "Set Config.Output.Lower and Config.Output.Upper to the target's public range"
	if sc.Schema != nil {
		file := sc.Schema.File
		if file == "" {
			file = "(built in code)"
		}
		what = "the schema " + file + " has no line for it"
		fix = fmt.Sprintf("Add the target's public range to the schema, the line\n  %s\n(fields as in its header %s), or set Config.Output.Lower and Config.Output.Upper",
			sc.Schema.LineFor(raw.Target, "LOWER", "UPPER"), sc.Schema.HeaderLine())
		if len(sc.Schema.Fields) == 0 { // not read from a file: no header to follow
			fix = fmt.Sprintf("Add the target's public range to the schema (column %s, lower LOWER, upper UPPER), or set Config.Output.Lower and Config.Output.Upper", raw.Target)
		}
	}
	return fieldError("EstimateTargetRange", fmt.Sprintf("the answers are private (Config.Output.Mechanism %s) and clipped to the range of the target %s, "+
		"but no range is declared: %s, and Config.Output.Lower/Config.Output.Upper are unset. %s; "+
		"or set Config.EstimateTargetRange to estimate the range privately from the data, once, for %s of the dataset's budget",
		cfg.Output.Mechanism, raw.Target, what, fix, p.privacy()))
}

// scaleDataset scales raw as cfg says, first estimating privately (and charging, or
// reusing the ledger's stored estimate) what no public source gives, and fills in
// cfg.Output's range (resolveOutputRange).
func scaleDataset(ctx context.Context, store curator.Ledger, cfg *Config, raw *dataset.Raw) (*dataset.Dataset, error) {
	p := planScaling(*cfg, raw)
	sc := cfg.Data.Scaling
	var est scalingEstimate
	if p.needed() {
		warnings, err := checkPlan(*cfg, raw, p)
		if err != nil {
			return nil, err
		}
		for _, w := range warnings {
			cfg.Logger.Warn(w)
			if cfg.Warn != nil {
				cfg.Warn(w)
			}
		}
		if f, err := dataset.ForecastBounds(raw.N, p.columns(raw), p.privacy()); err == nil && len(warnings) == 0 {
			cfg.Logger.Info("private scaling estimate forecast", zap.String("forecast", f.String()))
		}
		if est, err = privateScaling(ctx, store, *cfg, raw, p, cfg.Logger); err != nil {
			return nil, err
		}
		if est.Target != nil {
			t := *est.Target
			t.Lower, t.Upper = answerRange(t.Lower, t.Upper)
			est.Target = &t
		}
		sc = applyEstimate(sc, p, est)
	}
	ds, err := raw.Scale(sc)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if cfg.DatasetName != "" {
		ds.Name = cfg.DatasetName
	}
	if err := resolveOutputRange(cfg, ds, est); err != nil {
		return nil, err
	}
	if p.target {
		// The range came from the private estimate: the answers' guarantee states its ε.
		cfg.Output.RangeEpsilon = p.epsT
	}
	if err := cfg.Output.Validate(); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return ds, nil
}
