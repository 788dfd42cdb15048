package curator

import (
	"cmp"
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

	"github.com/privbo/privbo/internal/figure"
	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
)

// ScalingPlan is what must be estimated privately before a dataset can be scaled and
// answered privately, and with which ε and δ (record replacement,
// ledger.RelationRecord). The estimate is one release (dataset.EstimateBoundsWith) over
// the feature columns, the target or both; it is charged under CuratorIdentity, so it
// spends the dataset cap that all identities share, and is reused at every restart
// with the same public parameters (ScalingPlan.Estimate).
type ScalingPlan struct {
	Features        bool    // estimate the feature bounds (scaling mode private without bounds)
	Target          bool    // estimate the target's range (private outputs, no range declared)
	EpsilonFeatures float64 // ε of the feature bounds; 0 unless Features
	EpsilonTarget   float64 // ε of the target's range; 0 unless Target
	Delta           float64 // δ of the whole estimate; 0 makes it pure ε-DP
	Share           float64 // the share of the budget spent (PlanScaling), for the key
}

// Privacy is the privacy of the whole estimate: the feature bounds and the target's
// range are one release (dataset.EstimateBoundsWith over all their columns).
func (p ScalingPlan) Privacy() dataset.BoundsPrivacy {
	return dataset.BoundsPrivacy{Epsilon: p.total(), Delta: p.Delta}
}

// Columns is the number of columns of raw the estimate covers.
func (p ScalingPlan) Columns(raw *dataset.Raw) int {
	c := 0
	if p.Features {
		c += raw.D
	}
	if p.Target {
		c++
	}
	return c
}

// total is the ε of the whole estimate, which covers the feature bounds and the
// target's range in one release.
func (p ScalingPlan) total() float64 { return p.EpsilonFeatures + p.EpsilonTarget }

// Needed reports whether anything is to be estimated.
func (p ScalingPlan) Needed() bool { return p.Features || p.Target }

// PlanScaling decides what to estimate of raw, scaled as sc with the answers out. The ε
// of the estimate is ε_s = share × budget.Epsilon; when both the feature bounds and the
// target's range are estimated, the features get d/(d+1) of it and the target
// 1/(d+1) (what each column costs is the same then; the whole is one release of
// ε_s). An explicit "private:EPS" fixes the features' ε to EPS instead, and the
// target, when estimated too, gets EPS/d (the same split). The δ of the estimate is
// δ_s = share × min(budget.Delta, datasetBudget.Delta), the same share of the δ that
// both limits it is charged to allow; with a δ budget of 0 the estimate is pure ε-DP
// (discrete Laplace noise, much coarser).
func PlanScaling(raw *dataset.Raw, sc dataset.Scaling, out OutputPrivacy, share float64, budget, datasetBudget ledger.Cost) ScalingPlan {
	p := ScalingPlan{Share: share}
	p.Features = sc.Mode == dataset.ScalePrivate && sc.Schema == nil
	p.Target = !answer.IsExact(out.Mechanism) && !out.RangeDeclared() && SchemaTargetRange(sc, raw.Target) == nil
	if p.Needed() {
		p.Delta = share * min(budget.Delta, datasetBudget.Delta)
	}
	d := float64(raw.D)
	epsS := share * budget.Epsilon
	switch {
	case p.Features && sc.Epsilon > 0:
		p.EpsilonFeatures = sc.Epsilon
		if p.Target {
			p.EpsilonTarget = sc.Epsilon / d
		}
	case p.Features && p.Target:
		p.EpsilonFeatures, p.EpsilonTarget = epsS*d/(d+1), epsS/(d+1)
	case p.Features:
		p.EpsilonFeatures = epsS
	case p.Target:
		p.EpsilonTarget = epsS
	}
	return p
}

// SchemaTargetRange is the target's range from the public schema of sc (schema mode,
// or private mode with bounds given in code), nil if it has none.
func SchemaTargetRange(sc dataset.Scaling, target string) *dataset.Bounds {
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
func scalingKey(p ScalingPlan, sc dataset.Scaling, raw *dataset.Raw) string {
	return scalingKeyOf(p, sc, raw, dataset.BoundsEstimator)
}

// scalingKeyOf is scalingKey for the named estimator.
func scalingKeyOf(p ScalingPlan, sc dataset.Scaling, raw *dataset.Raw, estimator string) string {
	params := struct {
		Share, EpsFeatures, EpsTarget float64
		Delta                         float64
		Clip, Unit                    float64
		Features                      []string
		Target                        string
		EstimateFeatures              bool
		EstimateTarget                bool
		Estimator                     string
	}{p.Share, p.EpsilonFeatures, p.EpsilonTarget, p.Delta, cmp.Or(sc.ClipNorm, dataset.DefaultClipNorm), cmp.Or(sc.Unit, dataset.DefaultUnit),
		raw.Features, raw.Target, p.Features, p.Target, estimator}
	b, _ := json.Marshal(params) // cannot fail: plain fields, finite floats
	h := sha256.Sum256(b)
	return ledger.KindScalingEstimate + "/" + hex.EncodeToString(h[:16])
}

// Estimate makes (or reuses, see privateScaling) the private estimate p plans for raw
// of dataset datasetID, and returns the scaling sc with the estimated feature bounds in
// it (applyEstimate) and the target's estimated range rounded for the answers
// (answerRange), nil unless p.Target.
func (p ScalingPlan) Estimate(ctx context.Context, store Ledger, datasetID string, sc dataset.Scaling, raw *dataset.Raw, log *zap.Logger) (dataset.Scaling, *dataset.Bounds, error) {
	est, err := privateScaling(ctx, store, datasetID, sc, raw, p, log)
	if err != nil {
		return sc, nil, err
	}
	var target *dataset.Bounds
	if est.Target != nil {
		t := *est.Target
		t.Lower, t.Upper = answerRange(t.Lower, t.Upper)
		est.Target = &t
		target = &dataset.Bounds{Lower: t.Lower, Upper: t.Upper}
	}
	return applyEstimate(sc, p, est), target, nil
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
// The charge spends the dataset cap, which all identities share; it also has to fit
// the per-identity limit of the curator's identity, which it does whenever the share
// is below 1.
func privateScaling(ctx context.Context, store Ledger, datasetID string, sc dataset.Scaling, raw *dataset.Raw, p ScalingPlan, log *zap.Logger) (scalingEstimate, error) {
	acct := ledger.Account{Dataset: datasetID, Identity: CuratorIdentity}
	key := scalingKey(p, sc, raw)
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
			zap.String("parts", p.describe(raw)), zap.String("bounds", string(b)))
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
	if p.Features {
		names = append(names, raw.Features...)
	}
	if p.Target {
		names = append(names, raw.Target)
	}
	d := len(names)
	x := make([]float64, 0, raw.N*d)
	for i := range raw.N {
		if p.Features {
			x = append(x, raw.X[i*raw.D:(i+1)*raw.D]...)
		}
		if p.Target {
			x = append(x, raw.Y[i])
		}
	}
	b, err := dataset.EstimateBoundsWith(x, raw.N, d, p.Privacy(), dp.CryptoSource())
	if err != nil {
		return scalingEstimate{}, fmt.Errorf("server: %w", err)
	}
	var est scalingEstimate
	for j, name := range names {
		cb := columnBounds{Column: name, Lower: b[j].Lower, Upper: b[j].Upper}
		if p.Target && j == d-1 {
			est.Target = &cb
		} else {
			est.Features = append(est.Features, cb)
		}
	}
	result, err := json.Marshal(est)
	if err != nil {
		return scalingEstimate{}, fmt.Errorf("server: %w", err)
	}
	rec, err := store.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: ledger.KindScalingEstimate, Relation: ledger.RelationRecord,
		Cost: ledger.Cost{Epsilon: p.total(), Delta: p.Delta}, Result: result, Description: p.describe(raw)})
	if err != nil {
		// Uncharged, so never returned: the caller gets no bounds to use by mistake.
		if be := (*ledger.BudgetError)(nil); errors.As(err, &be) {
			return scalingEstimate{}, fmt.Errorf("server: the private scaling estimate needs ε = %g, δ = %g (record replacement) from the dataset's budget, which is shared by all identities, "+
				"but the ledger refused it (%s cap: ε %g, δ %g left): %w",
				p.total(), p.Delta, be.Scope, be.Remaining.Epsilon, be.Remaining.Delta, err)
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
func (p ScalingPlan) describe(raw *dataset.Raw) string {
	var parts []string
	f, t := estimateParts(p.EpsilonFeatures, p.EpsilonTarget, p.Delta)
	if p.Features {
		parts = append(parts, fmt.Sprintf("bounds of %d feature columns (%s of it)", raw.D, f))
	}
	if p.Target {
		parts = append(parts, fmt.Sprintf("the range of target %s (%s of it)", raw.Target, t))
	}
	mech := "noisy log-histograms, discrete Gaussian noise, zCDP"
	if p.Delta == 0 {
		mech = "noisy log-histograms, discrete Laplace noise"
	}
	return "private scaling estimate (" + mech + ", record replacement; share " +
		figure.Text(p.Share) + " of the budget): " + strings.Join(parts, " and ") + ", one release of " + p.Privacy().String()
}

// estimateParts states the parts of a private scaling estimate, the feature bounds
// (ε features) and the target's range (ε target), one release of (features + target, δ).
// With δ > 0 the release is ρ-zCDP, ρ = dp.ZCDPRho(ε, δ), split between the columns'
// histograms in proportion to the parts' ε (package dataset), so a part is its share
// of ρ, with the ε that share alone converts to at δ (dp.ZCDPEpsilon), which is more
// than its linear share of ε. With δ = 0 the release is pure ε-DP and the parts are ε
// shares (basic composition). A part that is the whole release is its ε.
func estimateParts(features, target, delta float64) (string, string) {
	total := features + target
	part := func(eps float64) string {
		if eps == total || delta == 0 {
			return "ε=" + figure.Up(eps)
		}
		rho := dp.ZCDPRho(total, delta) * eps / total
		return fmt.Sprintf("ρ=%s of zCDP, ε=%s at δ=%s", figure.Up(rho), figure.Up(dp.ZCDPEpsilon(rho, delta)), figure.Text(delta))
	}
	return part(features), part(target)
}

// check verifies that a stored estimate covers what p needs of raw.
func (e scalingEstimate) check(raw *dataset.Raw, p ScalingPlan) error {
	ok := func(b columnBounds) bool {
		return !math.IsNaN(b.Lower) && !math.IsInf(b.Lower, 0) && !math.IsNaN(b.Upper) && !math.IsInf(b.Upper, 0) && b.Lower < b.Upper
	}
	if p.Features {
		if len(e.Features) != raw.D {
			return fmt.Errorf("holds %d feature bounds, want %d", len(e.Features), raw.D)
		}
		for j, b := range e.Features {
			if b.Column != raw.Features[j] || !ok(b) {
				return fmt.Errorf("feature bounds %d do not fit column %q", j, raw.Features[j])
			}
		}
	}
	if p.Target && (e.Target == nil || e.Target.Column != raw.Target || !ok(*e.Target)) {
		return fmt.Errorf("holds no valid range for target %q", raw.Target)
	}
	return nil
}

// applyEstimate puts the estimate into the scaling: the feature bounds as the private
// mode's schema, with the target's range on its own line when it was estimated.
func applyEstimate(sc dataset.Scaling, p ScalingPlan, est scalingEstimate) dataset.Scaling {
	if !p.Features {
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
		sc.TargetEpsilon = p.EpsilonTarget
	}
	sc.Epsilon, sc.Delta = p.EpsilonFeatures, p.Delta
	sc.Schema = dataset.SchemaFromBounds(fmt.Sprintf("(bounds estimated with %s)", p.Privacy()), slices.Clone(names), bounds)
	return sc
}

// What names what p estimates, for messages.
func (p ScalingPlan) What() string {
	switch {
	case p.Features && p.Target:
		return "the feature bounds and the target's range"
	case p.Features:
		return "the feature bounds"
	}
	return "the target's range"
}
