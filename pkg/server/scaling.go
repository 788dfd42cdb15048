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
	"github.com/privbo/privbo/pkg/ledger"
)

// DefaultPrivateScalingShare is the default Config.PrivateScalingShare: the fraction
// of the per-identity budget ε spent, once, on the private scaling estimate.
const DefaultPrivateScalingShare = 0.1

// ScalingEstimateKind is the ledger kind of the private scaling estimate, charged under
// the curator's own identity (curator.CuratorIdentity) and ledger.RelationRecord.
const ScalingEstimateKind = ledger.KindScalingEstimate

// scalingPlan says what Start must estimate privately before it can scale the dataset
// and answer privately, and with which ε (record replacement, ledger.RelationRecord).
type scalingPlan struct {
	features bool    // estimate the feature bounds (scaling mode private without bounds)
	target   bool    // estimate the target's range (private outputs, no range declared)
	epsF     float64 // ε of the feature bounds; 0 unless features
	epsT     float64 // ε of the target's range; 0 unless target
	share    float64 // Config.PrivateScalingShare, for the key
}

// total is the ε of the whole estimate: the feature bounds and the target's range are
// estimated on the same records, so their ε add up (basic composition, Dwork & Roth
// 2014, Theorem 3.16).
func (p scalingPlan) total() float64 { return p.epsF + p.epsT }

func (p scalingPlan) needed() bool { return p.features || p.target }

// outputRangeDeclared reports whether the operator gave the target's range in flags.
func outputRangeDeclared(o curator.OutputPrivacy) bool { return o.Lower != 0 || o.Upper != 0 }

// planScaling decides what to estimate. The ε of the estimate is
// ε_s = PrivateScalingShare × Budget.Epsilon; when both the feature bounds and the
// target's range are estimated, the features get d/(d+1) of it and the target
// 1/(d+1) (each feature's two quantiles and the target's cost the same then). An
// explicit "private:EPS" fixes the features' ε to EPS instead, and the target, when
// estimated too, gets EPS/d (the same split).
func planScaling(cfg Config, raw *dataset.Raw) scalingPlan {
	sc := cfg.Data.Scaling
	p := scalingPlan{share: cfg.PrivateScalingShare}
	p.features = sc.Mode == dataset.ScalePrivate && sc.Schema == nil
	p.target = cfg.Output.Mechanism != "none" && !outputRangeDeclared(cfg.Output) && schemaTargetRange(sc, raw.Target) == nil
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
// any change of them is a new release with a new charge.
func scalingKey(p scalingPlan, sc dataset.Scaling, raw *dataset.Raw) string {
	params := struct {
		Share, EpsFeatures, EpsTarget float64
		Clip, Unit                    float64
		Features                      []string
		Target                        string
		EstimateFeatures              bool
		EstimateTarget                bool
		QLow, QHigh                   float64
		Grid                          int
	}{p.share, p.epsF, p.epsT, orDefault(sc.ClipNorm, dataset.DefaultClipNorm), orDefault(sc.Unit, dataset.DefaultUnit),
		raw.Features, raw.Target, p.features, p.target, dataset.BoundsLowQuantile, dataset.BoundsHighQuantile, len(dataset.BoundsGrid())}
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
// the curator's own identity and ledger.RelationRecord (EstimateBounds is ε-DP under
// the replacement of one record), with the bounds as the record's result, in the same
// transaction: nothing of it is used before the charge commits, and if another curator
// process charged the same key first its stored bounds are used. Repeating the release
// costs nothing: a restart reads the stored bounds and charges nothing.
//
// The charge spends the dataset cap (Config.DatasetBudget), which all identities
// share; it also has to fit the per-identity limit of the curator's identity, which it
// does whenever ε_s < Budget.Epsilon (a share below 1).
func privateScaling(ctx context.Context, store ledger.Store, cfg Config, raw *dataset.Raw, p scalingPlan, log *zap.Logger) (scalingEstimate, error) {
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
			zap.Float64("epsilon_features", p.epsF), zap.Float64("epsilon_target", p.epsT), zap.String("bounds", string(b)))
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
	src := dp.CryptoSource()
	var est scalingEstimate
	if p.features {
		b, err := dataset.EstimateBounds(raw.X, raw.N, raw.D, p.epsF, src)
		if err != nil {
			return est, fmt.Errorf("server: %w", err)
		}
		for j, f := range raw.Features {
			est.Features = append(est.Features, columnBounds{Column: f, Lower: b[j].Lower, Upper: b[j].Upper})
		}
	}
	if p.target {
		b, err := dataset.EstimateBounds(raw.Y, raw.N, 1, p.epsT, src)
		if err != nil {
			return est, fmt.Errorf("server: %w", err)
		}
		est.Target = &columnBounds{Column: raw.Target, Lower: b[0].Lower, Upper: b[0].Upper}
	}
	result, err := json.Marshal(est)
	if err != nil {
		return est, fmt.Errorf("server: %w", err)
	}
	rec, err := store.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: ScalingEstimateKind, Relation: ledger.RelationRecord,
		Cost: ledger.Cost{Epsilon: p.total()}, Result: result, Description: p.describe(raw)})
	if err != nil {
		if be := (*ledger.BudgetError)(nil); errors.As(err, &be) {
			return est, fmt.Errorf("server: the private scaling estimate needs ε = %g (record replacement) from the dataset's budget, which is shared by all identities, "+
				"but the ledger refused it (%s cap: ε %g left): raise Config.DatasetBudget.Epsilon (or Config.Budget.Epsilon), lower Config.PrivateScalingShare, "+
				"or give public bounds and the target's range in a schema, Config.Data.Scaling.Schema (and Config.Output.Lower/Config.Output.Upper): %w", p.total(), be.Scope, be.Remaining.Epsilon, err)
		}
		return est, fmt.Errorf("server: charging the private scaling estimate: %w", err)
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

// describe is the ledger record's description: what was estimated, with which ε.
func (p scalingPlan) describe(raw *dataset.Raw) string {
	var parts []string
	if p.features {
		parts = append(parts, fmt.Sprintf("bounds of %d feature columns with ε=%g", raw.D, p.epsF))
	}
	if p.target {
		parts = append(parts, fmt.Sprintf("the range of target %s with ε=%g", raw.Target, p.epsT))
	}
	return "private scaling estimate (exponential mechanism, record replacement; share " +
		strconv.FormatFloat(p.share, 'g', -1, 64) + " of the identity budget ε): " + strings.Join(parts, " and ")
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
	sc.Epsilon = p.epsF
	sc.Schema = dataset.SchemaFromBounds(fmt.Sprintf("(bounds estimated with ε = %g)", p.epsF), slices.Clone(names), bounds)
	return sc
}

// resolveOutputRange fills the target's range of private outputs: the operator's
// Output.Lower/Upper first, then the schema's line for the target, then the
// private estimate. It fails, naming all three ways, when none is available.
func resolveOutputRange(cfg *Config, ds *dataset.Dataset, est scalingEstimate) error {
	o := &cfg.Output
	if o.Mechanism == "none" || outputRangeDeclared(*o) {
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

// scaleDataset scales raw as cfg says, first estimating privately (and charging, or
// reusing the ledger's stored estimate) what no public source gives, and fills in
// cfg.Output's range (resolveOutputRange).
func scaleDataset(ctx context.Context, store ledger.Store, cfg *Config, raw *dataset.Raw) (*dataset.Dataset, error) {
	p := planScaling(*cfg, raw)
	sc := cfg.Data.Scaling
	var est scalingEstimate
	if p.needed() {
		var err error
		if est, err = privateScaling(ctx, store, *cfg, raw, p, cfg.Logger); err != nil {
			return nil, err
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
