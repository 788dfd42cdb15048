package curator

import (
	"fmt"

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

// ProjectionGuarantee is the guarantee stated to the modeler with a projection release
// of (eps, delta): its mechanism and neighbour relation, and, when query answers are
// exact, that the answers are not covered by it.
func (c *Curator) ProjectionGuarantee(eps, delta float64) string {
	var s string
	if c.cfg.ProjectionMechanism == projection.MechanismGaussian {
		s = fmt.Sprintf("(ε=%g, δ=%g)-DP under the %s neighbour relation (one record's feature vector changes by at most one protected unit): "+
			"mechanism gaussian, the JL projection plus Gaussian noise calibrated to its sensitivity (Kenthapadi et al. 2013)", eps, delta, ProjectionRelation)
	} else {
		s = fmt.Sprintf("mechanism lifted (Kharkovskii et al. 2020, Algorithm 1): (ε=%g, δ=%g) under the %s neighbour relation as claimed by its Theorem 1, which does not hold: "+
			"the release is the data times a fixed matrix, so an adversary who knows d+1 rows recovers linear measurements of every other row; "+
			"curators who need the guarantee use --projection-mechanism gaussian", eps, delta, ProjectionRelation)
	}
	if n := c.exactAnswersNote(); n != "" {
		s += "; " + n
	}
	return s
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
		"so an identity is charged (ε, δ) once for all its answers; each identity gets fresh noise and pays once"
	switch o.Mechanism {
	case "laplace":
		return fmt.Sprintf("each answer (ε=%g, δ=0)-DP under the %s neighbour relation (one record replaced by any other): mechanism laplace, "+
			"the recorded value clipped to [%g, %g] plus Laplace noise calibrated to the sensitivity %g; %s",
			o.Epsilon, AnswerRelation, o.Lower, o.Upper, o.Upper-o.Lower, once)
	case "gaussian":
		return fmt.Sprintf("each answer (ε=%g, δ=%g)-DP under the %s neighbour relation (one record replaced by any other): mechanism gaussian, "+
			"the recorded value clipped to [%g, %g] plus Gaussian noise calibrated to the sensitivity %g (analytic Gaussian, Balle & Wang 2018); %s",
			o.Epsilon, o.Delta, AnswerRelation, o.Lower, o.Upper, o.Upper-o.Lower, once)
	}
	s := "no guarantee (ε = ∞): exact answers (output privacy none, the operator's explicit choice)"
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
	if l := c.cfg.ExactAnswers; l.RequireProjection || l.MaxRowsPerIdentity > 0 {
		s += ";"
		if l.RequireProjection {
			s += " answered only to identities that hold a projection release"
		}
		if l.MaxRowsPerIdentity > 0 {
			if l.RequireProjection {
				s += ","
			}
			s += fmt.Sprintf(" at most %d distinct rows per identity", l.MaxRowsPerIdentity)
		}
	}
	return s
}

// GuaranteeStatement is the whole protection of the served dataset in plain words: the
// projection's mechanism, relation and unit, and the answers' guarantee.
func (c *Curator) GuaranteeStatement() string {
	var p string
	if c.cfg.ProjectionMechanism == projection.MechanismGaussian {
		p = fmt.Sprintf("Projection releases: mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the %s neighbour relation, one protected unit being: %s",
			ProjectionRelation, c.ds.Unit)
	} else {
		p = fmt.Sprintf("Projection releases: mechanism lifted (Kharkovskii et al. 2020, Algorithm 1), whose claimed (ε, δ) under the %s neighbour relation does not hold; one protected unit being: %s",
			ProjectionRelation, c.ds.Unit)
	}
	return p + " Query answers: " + c.OutputGuarantee() + "."
}
