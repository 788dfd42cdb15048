package server

import (
	"fmt"

	"github.com/privbo/privbo/internal/figure"
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
	// fmtCost states a whole-patient cost, with extra (the curator's own estimate, which
	// every identity's releases depend on) before the words on what the figure protects.
	fmtCost := func(c ledger.PatientCost, extra string) string {
		if c.Unbounded {
			return "NOT BOUNDED"
		}
		return fmt.Sprintf("ε=%s, δ=%s", figure.Up(c.Epsilon), figure.Text(c.Delta)) + extra + figure.WholeRecordWords(c.Epsilon)
	}
	// Each identity's total leaves out the curator's own estimate: the texts add it
	// (docs/PRIVACY.md, section 0).
	own := ""
	if !st.Own.IsZero() {
		own = fmt.Sprintf(" plus the curator's own estimate (ε=%s, δ=%s)", figure.Up(st.Own.Epsilon), figure.Text(st.Own.Delta))
	}
	var out []string
	l := cfg.LedgerLimits().Patient
	if l.Enabled() {
		out = append(out, fmt.Sprintf("Whole patient: the ledger caps what one patient can lose at %s for each identity%s, and at %s for all of them together.",
			capText(l.PerIdentity), own, capText(l.Dataset)))
	} else {
		out = append(out, "Whole patient: no cap on what one patient can lose over all relations ("+cfg.Flag(&cfg.PatientBudget.Epsilon)+"); "+
			"the per-relation caps bound it, and curator ledger shows the total.")
	}
	proj := s.curator.WholePatientOf(st.Projection.Epsilon, st.Projection.Delta)
	ans := ledger.DefaultPatientCost(curator.AnswerRelation, st.Answers)
	out = append(out, fmt.Sprintf("Whole patient: one default study costs a whole patient %s.", fmtCost(sumPatient(proj, ans), " (its projection by group privacy at the clip diameter)"+own)))
	fu := s.curator.WholePatientOf(cfg.DatasetBudget.Epsilon, cfg.DatasetBudget.Delta)
	out = append(out, fmt.Sprintf("Whole patient: one projection spending the dataset's feature-unit cap would cost a whole patient %s; record-level releases cost what they state.", fmtCost(fu, "")))
	if cfg.Jobs.Enabled {
		tar := ledger.DefaultPatientCost(ledger.RelationTrainingAddRemove, cfg.DatasetBudget)
		out = append(out, fmt.Sprintf("Whole patient: DP-HyPO jobs cost a whole patient two add/remove steps, at most %s for the cap.", fmtCost(tar, "")))
		if cfg.Jobs.TrainingConsented {
			out = append(out, "Whole patient: Kusner jobs cost their validation part's (ε, δ), the training part being declared consented ("+cfg.Flag(&cfg.Jobs.TrainingConsented)+").")
		} else {
			out = append(out, "Whole patient: Kusner jobs are NOT BOUNDED for a patient of the training part ("+cfg.Flag(&cfg.Jobs.TrainingConsented)+" declares it consented).")
		}
	}
	return out
}

// capText prints a whole-patient cap ("no cap" for ε 0).
func capText(c ledger.Cost) string {
	if c.Epsilon == 0 {
		return "no cap"
	}
	return fmt.Sprintf("ε=%s, δ=%s", figure.Text(c.Epsilon), figure.Text(c.Delta))
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
