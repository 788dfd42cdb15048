package server

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/figure"
	"github.com/privbo/privbo/internal/testlog"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
)

// longDecimal is a figure with 10 or more decimals: float noise.
var longDecimal = regexp.MustCompile(`\d\.\d{10,}`)

// TestStartTextsTrueFigures: the start-up's whole-patient lines and its default study,
// on diabetes with the private scaling estimate (feature bounds and the target's
// range) and a whole-patient cap, state true figures, computed here from the
// parameters: the per-identity cap is stated plus the curator's own estimate (its
// share of the budget, ε = share·ε, δ = share·δ), the default study's whole-patient ε
// (the projection's figure plus the answers' ε) is said to protect no whole record,
// the privately estimated range is not called public, and every line is at most 300
// characters with no float noise.
func TestStartTextsTrueFigures(t *testing.T) {
	cfg := diabetesServe(t.TempDir())
	cfg.PatientBudget = ledger.Cost{Epsilon: 1000, Delta: 1e-4}
	sc, err := dataset.ParseScaling(string(dataset.ScalePrivate))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Data.Scaling = sc
	log, logs := testlog.New()
	cfg.Logger = log
	srv, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	share := config.DefaultPrivateScalingShare
	st := srv.DefaultStudy()
	wantOwn := "plus the curator's own estimate (ε=" + figure.Up(share*cfg.Budget.Epsilon) + ", δ=" + figure.Text(share*cfg.Budget.Delta) + ")"
	lines := srv.PatientStatement()
	if !strings.Contains(lines[0], "for each identity "+wantOwn) {
		t.Errorf("the cap line %q does not state the per-identity cap %s", lines[0], wantOwn)
	}
	whole := srv.Curator().WholePatientOf(st.Projection.Epsilon, st.Projection.Delta).Epsilon + ledger.DefaultPatientCost(curator.AnswerRelation, st.Answers).Epsilon
	if want := "costs a whole patient ε=" + figure.Up(whole) + ", δ="; whole <= figure.RecordProtectingEpsilon ||
		!strings.Contains(lines[1], want) || !strings.Contains(lines[1], "which protects no whole record") {
		t.Errorf("the default study's line %q lacks %q and that ε=%g protects no whole record", lines[1], want, whole)
	}
	stmt := st.Statement()
	if !strings.Contains(stmt, "privately estimated range") || strings.Contains(stmt, "public range") {
		t.Errorf("the default study %q calls the privately estimated range public, or does not say it was estimated", stmt)
	}
	for _, l := range append(lines, stmt) {
		if n := len([]rune(l)); n > 300 || longDecimal.MatchString(l) {
			t.Errorf("start-up line of %d characters (want at most 300) or with float noise: %s", n, l)
		}
	}
	if strings.Count(logs.String(), lines[1]) != 1 {
		t.Errorf("the log does not hold the default study's whole-patient line once:\n%s", logs.String())
	}
}

// TestStudyWarningShort: the warning that the dataset cap holds fewer than two default
// studies counts them in words ("1 default study"), names the flags and fits 300
// characters.
func TestStudyWarningShort(t *testing.T) {
	for _, tc := range []struct {
		dataset, perIdentity int
		want                 string
	}{
		{1, 5, "holds 1 default study and one identity's budget 5 default studies"},
		{0, 0, "holds 0 default studies and one identity's budget 0 default studies"},
		{2, 1, ""},
	} {
		w := StudyWarning(curator.StudyCapacity{Dataset: tc.dataset, PerIdentity: tc.perIdentity})
		if tc.want == "" {
			if w != "" {
				t.Errorf("StudyWarning(%d, %d) = %q, want none", tc.dataset, tc.perIdentity, w)
			}
			continue
		}
		if !strings.Contains(w, tc.want) || !strings.Contains(w, "--dataset-budget-epsilon") || len([]rune(w)) > 300 {
			t.Errorf("StudyWarning(%d, %d) = %q (%d characters), want %q, the flag, at most 300 characters", tc.dataset, tc.perIdentity, w, len([]rune(w)), tc.want)
		}
	}
}
