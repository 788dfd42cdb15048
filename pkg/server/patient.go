package server

import (
	"fmt"
	"math"
	"strconv"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
)

// PatientStatement states, in lines for the operator's log and standard error, what a
// whole patient can lose under the curator's settings: the whole-patient caps (or that
// there are none), what one default study costs a whole patient, and what spending the
// per-relation caps would, with the conversions the ledger uses (docs/PRIVACY.md).
func (s *Server) PatientStatement() []string { return s.patient }

// LimitsStart is what the start found and did of the ledger's limits in force.
func (s *Server) LimitsStart() ledger.LimitsStart { return s.limitsStart }

func (s *Server) patientStatement() []string {
	cfg, st := s.cfg, s.study
	fmtCost := func(c ledger.PatientCost) string {
		if c.Unbounded {
			return "NOT BOUNDED"
		}
		return fmt.Sprintf("ε=%s, δ=%g", roundUp(c.Epsilon), c.Delta)
	}
	var out []string
	l := cfg.LedgerLimits().Patient
	if l.Enabled() {
		out = append(out, fmt.Sprintf("whole patient: the ledger caps what one patient can lose, over every relation and release: %s for each identity, %s for all of them together (dataset %s)",
			capText(l.PerIdentity), capText(l.Dataset), cfg.DatasetID))
	} else {
		out = append(out, fmt.Sprintf("whole patient: no cap on what one patient can lose over all relations ("+s.cfg.Flag(&s.cfg.PatientBudget.Epsilon)+"); the ledger keeps the total "+
			"(curator ledger, GetBudget, /metrics) and only the per-relation caps bound it, as follows (dataset %s)", cfg.DatasetID))
	}
	proj := s.curator.WholePatientOf(st.Projection.Epsilon, st.Projection.Delta)
	ans := ledger.DefaultPatientCost(curator.AnswerRelation, st.Answers)
	study := sumPatient(proj, ans)
	out = append(out, fmt.Sprintf("whole patient: one default study (a projection at ε=%g, δ=%g and the answers at ε=%g, δ=%g) costs a whole patient %s "+
		"(the projection %s by group privacy at the clip diameter, the answers %s as stated)",
		st.Projection.Epsilon, st.Projection.Delta, st.Answers.Epsilon, st.Answers.Delta, fmtCost(study), fmtCost(proj), fmtCost(ans)))
	fu := s.curator.WholePatientOf(cfg.DatasetBudget.Epsilon, cfg.DatasetBudget.Delta)
	full := fmt.Sprintf("whole patient: one projection spending the dataset's feature-unit cap (ε=%g, δ=%g) would cost a whole patient %s; "+
		"record-level releases (answers, estimates) cost what they state, up to the record cap",
		cfg.DatasetBudget.Epsilon, cfg.DatasetBudget.Delta, fmtCost(fu))
	if cfg.Jobs.Enabled {
		tar := ledger.DefaultPatientCost(ledger.RelationTrainingAddRemove, cfg.DatasetBudget)
		full += fmt.Sprintf("; DP-HyPO jobs (one training record added or removed) cost a whole patient their replacement, two steps: at most %s for the cap", fmtCost(tar))
		if cfg.Jobs.TrainingConsented {
			full += "; Kusner jobs their validation part's (ε, δ), the operator having declared the training part consented (" + s.cfg.Flag(&s.cfg.Jobs.TrainingConsented) + ")"
		} else {
			full += "; Kusner jobs are NOT BOUNDED for a patient of the training part, which they use without any mechanism (" + s.cfg.Flag(&s.cfg.Jobs.TrainingConsented) + " declares it consented)"
		}
	}
	return append(out, full)
}

// capText prints a whole-patient cap ("no cap" for ε 0).
func capText(c ledger.Cost) string {
	if c.Epsilon == 0 {
		return "no cap"
	}
	return fmt.Sprintf("ε=%g, δ=%g", c.Epsilon, c.Delta)
}

// roundUp prints ε to three significant digits, rounded up (a bound stays a bound).
func roundUp(e float64) string {
	if e == 0 || math.IsInf(e, 0) {
		return strconv.FormatFloat(e, 'g', -1, 64)
	}
	p := math.Pow(10, math.Floor(math.Log10(e))-2)
	return strconv.FormatFloat(math.Ceil(e/p)*p, 'g', 3, 64)
}

func sumPatient(ps ...ledger.PatientCost) ledger.PatientCost {
	var out ledger.PatientCost
	for _, p := range ps {
		if p.Unbounded {
			return ledger.Unbounded
		}
		out.Epsilon += p.Epsilon
		out.Delta += p.Delta
	}
	return out
}
