package curator

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
)

// The neighbour relations of the curator's releases (package ledger).
const (
	// ProjectionRelation: the projection's (ε, δ) holds for datasets whose records
	// differ in one feature vector by at most one protected unit (Dataset.Unit).
	ProjectionRelation = ledger.RelationFeatureUnit
	// AnswerRelation: a private answer's (ε, δ) holds for datasets differing in one
	// record replaced by any other (its features and target alike).
	AnswerRelation = ledger.RelationRecord
)

// ProjectionGuarantee is the guarantee stated for a projection release of (eps, delta)
// before it is made: its mechanism and neighbour relation, when query answers are exact
// that the answers are not covered by it, the protected unit (Dataset.Unit), and the
// whole-patient equivalent (see wholePatient). Its figures hold for every release
// dimension and every sensitivity (nominalMargin); a release states the figures of its
// own n·r values and sensitivity instead, which agree with these to the digits shown
// but for a rounding boundary.
func (c *Curator) ProjectionGuarantee(eps, delta float64) string {
	return c.projectionGuarantee(eps, delta, 0, 0)
}

// projectionGuarantee is ProjectionGuarantee for a release of m values whose noise was
// calibrated to the L2 sensitivity sens (projection.Report.Sensitivity); sens = 0 when
// it is not known, for nominal figures.
func (c *Curator) projectionGuarantee(eps, delta float64, m int, sens float64) string {
	return c.projectionGuaranteeWith(eps, delta, c.wholePatient(eps, delta, m, sens))
}

// projectionGuaranteeWith is projectionGuarantee with the whole-patient statement w
// already computed for the release.
func (c *Curator) projectionGuaranteeWith(eps, delta float64, w wholePatientStatement) string {
	s := c.proj.Guarantee(eps, delta).String()
	if n := c.exactAnswersNote(); n != "" {
		s += "; " + n
	}
	s += "."
	if u := c.unitText(); u != "" {
		s += " One protected unit: " + u
	}
	return s + " " + w.sentence() + "."
}

// nominalPatientLowerBound is a lower bound on the whole-patient cost of a projection
// release of (eps, delta) before it is made, for refusing early what the charge would
// refuse (the charge states the release's own figure): the nominal figure divided by
// (1 + nominalMargin)², below the figure of every dimension and sensitivity (see
// nominalMargin). Unbounded when the release would have no figure.
func (c *Curator) nominalPatientLowerBound(eps, delta float64) ledger.PatientCost {
	p := c.wholePatient(eps, delta, 0, 0).patientCost()
	if !p.Unbounded {
		f := (1 + projection.NominalMargin) * (1 + projection.NominalMargin)
		p.Epsilon, p.Rho = p.Epsilon/f, p.Rho/f
	}
	return p
}

// WholePatientLabel opens the whole-patient sentence of a projection guarantee. The
// sentence holds no ". " until its final full stop, so that a reader (the study report)
// can pick it out of the guarantee text.
const WholePatientLabel = "Whole patient: "

// wholePatientDistances are the public distances, in protected units, tabulated below
// the clip diameter: fixed in advance, never taken from the data.
var wholePatientDistances = []float64{1, 2, 5, 10}

// The example release of the dataset's statement (GuaranteeStatement).
const exampleEpsilon, exampleDelta = 1, 1e-5

// The nominal margin makes whole-patient figures computed at the nominal sensitivity 1 and
// one dimension upper bounds for every sensitivity Δ and dimension m. The
// VectorGaussian's ε at a distance of D units depends on Δ and m only through the ratio
// s_D/s = (D·a + √m)/(a + √m), a = Δ/2^k the sensitivity in lattice steps, and its
// lattice has √m/a ≤ 2⁻²⁰ (dp.NewVectorGaussian), so the ratio, hence ρ_D = s_D²/(2N)
// (Canonne, Kamath & Steinke 2020, Theorem 14), moves by less than 2⁻¹⁹ ≈ 1.9e-6
// relative between any two (Δ, m), and ε (increasing and at most linear in ρ at every
// Rényi order) by no more; 1e-5 leaves a margin of five times that.
//
// The margin is the mechanism's (projection.NominalMargin); this comment says why it
// suffices for the curator's figures.

// wholePatientStatement is the whole-patient equivalent of a projection release.
type wholePatientStatement struct {
	// none is the reason there is no guarantee at any distance ("" if there is one).
	none string
	// diam is the clip diameter in protected units; eps the release's ε for it
	// (rounded up, as shown); table the figures by public distance; note the scaling's
	// own cost (scalingNote).
	diam       float64
	eps, table string
	note       string
	delta      float64
	// epsValue is the ε for the clip diameter as a number (eps is it rounded up);
	// rho the release's ρ of zCDP at the clip diameter.
	epsValue, rho float64
}

// patientCost is the whole-patient cost of the release w states (ledger.PatientCost):
// its (ε, δ) at the clip diameter, at the release's own δ, with its ρ; unbounded when
// there is no figure. The private scaling's own ε is charged once for the dataset, by
// the curator's own account, not with each release.
func (w wholePatientStatement) patientCost() ledger.PatientCost {
	if w.none != "" || math.IsInf(w.epsValue, 0) || !(w.epsValue >= 0) {
		return ledger.Unbounded
	}
	return ledger.PatientCost{Epsilon: w.epsValue, Delta: w.delta, Rho: w.rho}
}

// sentence is the statement for a release's guarantee text, opening with
// WholePatientLabel, without a final full stop.
func (w wholePatientStatement) sentence() string {
	if w.none != "" {
		return WholePatientLabel + "no guarantee (" + w.none + ")"
	}
	s := fmt.Sprintf("%sreplacing one patient's record by any other moves its scaled row by at most %s (the clip diameter), "+
		"so this release is (ε=%s, δ=%g)-DP under the %s neighbour relation (the Gaussian mechanism's guarantee at that distance, Canonne, Kamath & Steinke 2020, Theorem 14); "+
		"at δ=%g by public distance, %s",
		WholePatientLabel, units(w.diam), w.eps, w.delta, AnswerRelation, w.delta, w.table)
	if w.note != "" {
		s += "; " + w.note
	}
	return s
}

// short is the statement for the ledger's description of the charge.
func (w wholePatientStatement) short() string {
	if w.none != "" {
		return "whole patient: no guarantee"
	}
	s := fmt.Sprintf("whole patient (%s): ε=%s at δ=%g", units(w.diam), w.eps, w.delta)
	if w.note != "" {
		s += ", plus the private scaling's ε"
	}
	return s
}

// wholePatient states what a projection release of (eps, delta) under the feature-unit
// relation means for the replacement of one patient's record by any other: the ε at the
// release's δ for the clip diameter (Dataset.ClipDiameterUnits), and a table for the
// public distances 1, 2, 5 and 10 units below it, computed by dp.WholeRecordTable on the
// release's own mechanism (m values, sensitivity sens; sens = 0 for nominal figures
// valid for every m and Δ, see nominalMargin). It uses no statistic of the data. The
// lifted mechanism and data-dependent scalings have no guarantee at any distance.
func (c *Curator) wholePatient(eps, delta float64, m int, sens float64) wholePatientStatement {
	return c.wholePatientOf(eps, delta, &projection.Report{N: m, R: 1, Sensitivity: sens})
}

// wholePatientOf is wholePatient for the release rep, whose own mechanism (rep.Noise)
// states the figures when it has one.
func (c *Curator) wholePatientOf(eps, delta float64, rep *projection.Report) wholePatientStatement {
	if why := c.proj.NoWholeRecord(); why != "" {
		return wholePatientStatement{none: why}
	}
	if !c.ds.Private {
		mode := string(c.ds.Scaling.Mode)
		if mode == "" {
			mode = string(dataset.ScaleStandardiseNonprivate)
		}
		return wholePatientStatement{none: "the scaling " + mode + " uses the data's own statistics, so one patient's change moves every scaled row and no distance covers it"}
	}
	diam := c.ds.ClipDiameterUnits()
	rows, rho, err := c.proj.WholeRecord(eps, delta, wholePatientDists(diam), rep)
	if err != nil {
		err = fmt.Errorf("curator: %w", err)
		// Not reached for the (ε, δ) a release accepts; say so rather than guess.
		return wholePatientStatement{none: "not computed: " + strings.ReplaceAll(err.Error(), ". ", "; ")}
	}
	return wholePatientStatement{
		diam: diam, delta: delta, epsValue: rows[len(rows)-1].Epsilon, rho: rho,
		eps:   dp.RoundUpEpsilon(rows[len(rows)-1].Epsilon),
		table: dp.FormatWholeRecordTable(rows, diam),
		note:  c.scalingNote(),
	}
}

// units renders a distance in protected units ("1 unit", "50 units").
func units(d float64) string {
	if d == 1 {
		return "1 unit"
	}
	return fmt.Sprintf("%g units", d)
}

// wholePatientDists are the public distances below the clip diameter diam at which a
// release's whole-patient figures are tabulated, then diam itself.
func wholePatientDists(diam float64) []float64 {
	var dists []float64
	for _, d := range wholePatientDistances {
		if d < diam {
			dists = append(dists, d)
		}
	}
	return append(dists, diam)
}

// scalingNote says, for a private-estimated scaling, what its estimate cost under the
// record relation ("" for scalings from public constants).
func (c *Curator) scalingNote() string {
	sc := c.ds.Scaling
	if sc.Mode != dataset.ScalePrivate {
		return ""
	}
	f, t := estimateParts(sc.Epsilon, sc.TargetEpsilon, sc.Delta)
	s := "the scaling's feature bounds were estimated from the data with " + f
	if sc.TargetEpsilon > 0 {
		s += " (and the target's range with " + t + ")"
	}
	return s + " under the " + string(AnswerRelation) + " neighbour relation, once for the dataset, which adds to any whole-patient ε"
}

// unitText is Dataset.Unit ending in a full stop ("" if there is none).
func (c *Curator) unitText() string {
	u := strings.TrimSpace(c.ds.Unit)
	if u != "" && !strings.HasSuffix(u, ".") {
		u += "."
	}
	return u
}

// exactAnswersNote says, when answers are exact, what that means for the features the
// projection protects ("" for private answers).
func (c *Curator) exactAnswersNote() string {
	if !c.out.exact() {
		return ""
	}
	if c.cfg.Evaluation.mode() == EvaluateProgram {
		return "the query answers are NOT covered: they are exact values of the operator's program on each queried record's features, " +
			"so every answer is an exact function of that record's features and the (ε, δ) above does not protect the features of queried records"
	}
	return "the query answers are NOT covered: they are exact, with no guarantee (ε = ∞)"
}

// OutputGuarantee states the guarantee of the query answers, or that they have none.
func (c *Curator) OutputGuarantee() string {
	o := c.out.cfg
	once := "answers to one identity compose in parallel (each record influences one answer; a repeated row replays its answer), " +
		"so an identity is charged (ε, δ) once for all its answers; each identity gets fresh noise and pays once; " +
		"a query may ask for a clip range inside the public one, whose fresh answers carry noise calibrated to its width at the same (ε, δ) and cost nothing more; " +
		"a confirmation pass (rows answered again with fresh noise, each at most once in the pass) is a new release, charged (ε, δ) again"
	if p := o.RangeEstimate; p.Target {
		_, part := estimateParts(p.EpsilonFeatures, p.EpsilonTarget, p.Delta)
		once += fmt.Sprintf("; the range [%s, %s] was estimated from the data with %s under the %s neighbour relation, once for the dataset "+
			"(charged to the curator's own account), which adds to the whole-patient ε of everything released", figure.Text(o.Lower), figure.Text(o.Upper), part, AnswerRelation)
	}
	g := c.out.mech.Guarantee()
	if g.Holds() {
		return fmt.Sprintf("each answer %s; %s; %s", g, once, wholePatientAnswers(g.Epsilon, g.Delta, o))
	}
	s := g.String()
	switch c.cfg.Evaluation.mode() {
	case EvaluateProgram:
		s += "; each answer is an exact function of the queried record's features (the operator's program run on them), so it reveals what the projection protects"
	case EvaluateManual:
		s += "; each answer is the evaluation a person recorded for the queried record"
	default:
		s += "; each answer is the queried record's target value as it is"
		if c.cfg.NoiseSD > 0 {
			s += fmt.Sprintf(" plus simulated observation noise (sd %g, drawn once per row), which protects nothing", c.cfg.NoiseSD)
		}
	}
	if l := c.cfg.ExactAnswers; l.RequireProjection || l.MaxRows > 0 {
		s += ";"
		if l.RequireProjection {
			s += " answered only to identities that hold a projection release"
		}
		if l.MaxRows > 0 {
			if l.RequireProjection {
				s += ","
			}
			s += fmt.Sprintf(" at most %d distinct rows of the dataset, to all identities together", l.MaxRows)
		}
	}
	return s + "; whole patient: no guarantee (ε = ∞)"
}

// wholePatientAnswers states the whole-patient equivalent of private answers: the
// relation is already the replacement of one record by any other, and the clipping range
// bounds what any record can contribute, so it is the stated (ε, δ) itself.
func wholePatientAnswers(eps, delta float64, o OutputPrivacy) string {
	return fmt.Sprintf("whole patient: the same (ε=%g, δ=%g), the relation being record-level already "+
		"(every answer lies in [%g, %g] whatever the patient, so replacing a whole patient moves it by at most the sensitivity)", eps, delta, o.Lower, o.Upper)
}

// GuaranteeStatement is the whole protection of the served dataset in plain words: the
// projection's mechanism, relation and unit, its whole-patient equivalent (with the
// figures of an example release at (ε, δ) = (1, 1e-5), valid for every dimension and
// sensitivity; each release states its own), and the answers' guarantee. It depends on
// the configuration and the dataset's scaling and unit only, none of which changes
// while the curator serves, so it is stated once, at the first call, and every later
// Info returns the same text without recomputing the whole-patient table (about
// 0.6 ms each).
func (c *Curator) GuaranteeStatement() string {
	c.guaranteeOnce.Do(func() { c.guarantee = c.guaranteeStatement() })
	return c.guarantee
}

func (c *Curator) guaranteeStatement() string {
	p := "Projection releases: " + c.proj.Guarantee(exampleEpsilon, exampleDelta).Summary() + " one protected unit being: " + c.unitText()
	w := c.wholePatient(exampleEpsilon, exampleDelta, 0, 0)
	ws := w.sentence()
	if w.none == "" {
		ws = fmt.Sprintf("%sreplacing one patient's record by any other moves its scaled row by at most %s (the clip diameter); "+
			"each release states the ε this gives at its own δ, for example a release at (ε=%g, δ=%g) is (ε=%s, δ=%g)-DP for it (%s)",
			WholePatientLabel, units(w.diam), float64(exampleEpsilon), exampleDelta, w.eps, exampleDelta, w.table)
		if w.note != "" {
			ws += "; " + w.note
		}
	}
	return p + " " + ws + ". Query answers: " + c.OutputGuarantee() + "."
}

// WholePatientOf is the whole-patient cost of a projection release of (eps, delta)
// before it is made: the nominal figure at the clip diameter, at the release's δ,
// which bounds that of every dimension and sensitivity (nominalMargin); unbounded for
// the lifted mechanism and data-dependent scalings.
func (c *Curator) WholePatientOf(eps, delta float64) ledger.PatientCost {
	return c.wholePatient(eps, delta, 0, 0).patientCost()
}

// PatientBalance returns identity's whole-patient account on this dataset and the
// dataset's (ledger.Ledger.PatientBalance).
func (c *Curator) PatientBalance(ctx context.Context, identity string) (ledger.PatientBalance, error) {
	b, err := c.ledger.PatientBalance(ctx, c.account(identity))
	if err != nil {
		return b, fmt.Errorf("curator: %w", err)
	}
	return b, nil
}
