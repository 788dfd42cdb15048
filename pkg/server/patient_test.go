package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/server"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestWholePatientReported: GetBudget, the projection header, /metrics and the start
// statement give the whole-patient figure: a default study's projection at unit 1 costs
// a whole patient far more than its ε, and the answers what they state.
func TestWholePatientReported(t *testing.T) {
	ctx := context.Background()
	c := curatortest.Start(t, curatortest.Options{Configure: func(c *config.Config) { c.MetricsListen = "127.0.0.1:0" }})
	client := c.Client(t, "acme")
	p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	w := p.Header.GetWholePatient()
	if !w.GetBounded() || w.GetEpsilon() < 100 || w.GetDelta() != 1e-5 {
		t.Errorf("header whole patient = %v, want bounded, above 100 (50 units), at δ 1e-5", w)
	}
	b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wp := b.GetBudget().GetWholePatient()
	// The projection's figure plus the answers' ε = 1; the dataset's adds the curator's
	// private scaling estimate.
	if want := w.GetEpsilon() + 1; !wp.GetBounded() || wp.GetEpsilonSpent() != want || wp.GetDeltaSpent() != 1e-5 ||
		!(wp.GetDatasetEpsilonSpent() > want) || wp.GetEpsilonLimit() != 0 || wp.GetEpsilonRemaining() != 0 ||
		!strings.HasPrefix(wp.GetStatement(), "Whole patient (identity acme on dataset diabetes: every release to it, plus the dataset's estimate if the curator made one, counted in the dataset's total): no patient can lose more than ε = ") {
		t.Errorf("GetBudget whole patient = %v, want ε %g, δ 1e-5, no cap", wp, want)
	}
	lines := strings.Join(c.Server.PatientStatement(), "\n")
	for _, want := range []string{"Whole patient: no cap on what one patient can lose", "one default study", "costs a whole patient ε=",
		"one projection spending the dataset's feature-unit cap"} {
		if !strings.Contains(lines, want) {
			t.Errorf("start statement lacks %q:\n%s", want, lines)
		}
	}
	if !strings.Contains(c.Logs.String(), "one default study") {
		t.Errorf("the start statement is not in the log")
	}
	resp, err := http.Get("http://" + c.Server.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`privbo_whole_patient_epsilon{dataset="diabetes",identity="acme"} `, `privbo_whole_patient_epsilon{dataset="diabetes",identity=""} `,
		`privbo_whole_patient_delta{dataset="diabetes",identity="acme"} 1e-05`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(string(body), "privbo_whole_patient_cap_epsilon") {
		t.Errorf("metrics report a whole-patient cap where none is set")
	}
}

// TestRangeEstimateInAnswersGuarantee: with a schema that lacks the target's line, the
// answers' range is estimated privately, and the answers' guarantee says with which ε
// (it was charged to the ledger alone before).
func TestRangeEstimateInAnswersGuarantee(t *testing.T) {
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("..", "..", "examples", "data", "diabetes.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, l := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(l, "progression,") {
			kept = append(kept, l)
		}
	}
	path := filepath.Join(t.TempDir(), "no-target.schema.csv")
	if err := os.WriteFile(path, []byte(strings.Join(kept, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	sc, err := dataset.ParseScaling("schema:" + path)
	if err != nil {
		t.Fatal(err)
	}
	c := curatortest.Start(t, curatortest.Options{Scaling: sc, Configure: func(c *config.Config) { c.EstimateTargetRange = true }})
	info, err := c.Client(t, "acme").GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	g := info.GetOutputPrivacy().GetGuarantee()
	want := fmt.Sprintf("was estimated from the data with ε=%g under the record neighbour relation, once for the dataset", config.DefaultPrivateScalingShare*c.Config.Budget.Epsilon)
	if !strings.Contains(g, want) {
		t.Errorf("answers' guarantee = %q, want %q (the share of the budget the estimate spent)", g, want)
	}
	// The guarantee names the schema by its base name, never the operator's path.
	if strings.Contains(info.GetGuarantee(), filepath.Dir(path)) || !strings.Contains(info.GetGuarantee(), "no-target.schema.csv") {
		t.Errorf("guarantee %q names the schema's directory, or not the schema", info.GetGuarantee())
	}
}

// TestPatientCapConflicts: a whole-patient cap cannot be set with settings every
// release of some kind of which has no whole-patient figure.
func TestPatientCapConflicts(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"exact answers", func(c *config.Config) { c.Output = curator.OutputPrivacy{Mechanism: "none"} }, "exact answers"},
		{"lifted", func(c *config.Config) { c.ProjectionMechanism = projection.MechanismLifted }, "lifted"},
		{"nonprivate scaling", func(c *config.Config) { c.Data.Scaling = dataset.Scaling{Mode: dataset.ScaleStandardiseNonprivate} }, "own statistics"},
	} {
		cfg := curatortest.Options{Configure: func(c *config.Config) {
			c.PatientBudget = ledger.Cost{Epsilon: 10}
			tc.edit(c)
		}}.Config(t)
		_, err := server.Start(context.Background(), cfg)
		var fe *config.FieldError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &fe) || fe.Field != "patient-budget-epsilon" {
			t.Errorf("%s with a whole-patient cap: %v, want a refusal naming --patient-budget-epsilon", tc.name, err)
		}
	}
}

// TestPatientCapKusnerWarning: a whole-patient cap with jobs whose training part is not
// declared consented is warned about (every Kusner job would be refused), and not once
// it is declared.
func TestPatientCapKusnerWarning(t *testing.T) {
	cfg := config.Config{Jobs: config.JobsConfig{Enabled: true}, PatientBudget: ledger.Cost{Epsilon: 10}, Budget: ledger.Cost{Epsilon: 1, Delta: 1e-5}}
	has := func(ws []string) bool {
		for _, w := range ws {
			if strings.Contains(w, "every Kusner job will be refused") {
				return true
			}
		}
		return false
	}
	if !has(config.Warnings(cfg)) {
		t.Errorf("Warnings(cap, jobs) = %q, want the Kusner refusal warned about", config.Warnings(cfg))
	}
	cfg.Jobs.TrainingConsented = true
	if has(config.Warnings(cfg)) {
		t.Errorf("Warnings(cap, jobs, training consented) warns about Kusner jobs")
	}
}
