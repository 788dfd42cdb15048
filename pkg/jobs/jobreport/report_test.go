package jobreport

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/jobs/jobspec"
	"github.com/privbo/privbo/pkg/kusner"
)

func write(t *testing.T, r Report) string {
	t.Helper()
	path, err := Write(r, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestReports renders a Kusner job for both audiences: the modeler's page has the
// release, the charge under its relation, the forecast and elapsed event times, and no
// path; the operator's page has the runs.
func TestReports(t *testing.T) {
	grid := []hparam.Axis{{Name: "lambda", Kind: hparam.AxisList, Values: []float64{0.01, 0.1}}}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := jobs.Job{ID: "job-1", State: jobs.Succeeded,
		Spec:   jobs.Spec{Kusner: &jobs.KusnerSpec{Algorithm: 1, Space: grid, Iterations: 5, Epsilon: 2, Delta: 1e-3}},
		Result: &jobs.Result{HasHyperparameters: true, Hyperparameters: map[string]float64{"lambda": 0.1}, Score: 0.9}}
	evs := []jobs.Event{{Seq: 1, Time: t0, State: jobs.Queued}, {Seq: 2, Time: t0.Add(1500 * time.Millisecond), State: jobs.Succeeded}}
	f := &kusner.Forecast{Candidates: 2, Epsilon: 2, Margin: 0.1, HasSelection: true, SelectionLift: 1.1, EpsilonNeeded: 2, Informative: true}
	page := write(t, Report{Job: j, Events: evs, Relation: "validation-record", Forecast: f, Generated: t0})
	for _, want := range []string{"validation-record", "<th>lambda</th><td>0.1</td>", "Informative", "stroke=\"#c00\"", "GP-UCB for T = 5 iterations", "1.5s</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the modeler's report lacks %q", want)
		}
	}
	if strings.Contains(page, "operator only") {
		t.Error("the modeler's report shows the operator's path")
	}
	tr := &jobs.Trace{Grid: grid, Steps: []jobs.TraceStep{jobspec.NewTraceStep(1, 1, map[string]float64{"lambda": 0.1}, 0.87, false, []float64{0.25, 0.75})},
		Final: []float64{0.5, 1.5}, Visits: []int{0, 1}}
	page = write(t, Report{Job: j, Events: evs, Trace: tr, Relation: "validation-record", Generated: t0})
	for _, want := range []string{"Runs (operator only)", "<td>lambda = 0.1</td><td>0.87</td><td>1.5</td><td>0.5</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the operator's report lacks %q", want)
		}
	}
}

// TestDPHyPOTiming: a DP-HyPO job's modeler report shows no time after the first event
// (the duration correlates with the private number of runs); the operator's shows them.
func TestDPHyPOTiming(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	j := jobs.Job{ID: "job-2", State: jobs.Succeeded, Spec: jobs.Spec{DPHyPO: &jobs.DPHyPOSpec{Theta: 1, Gamma: 0.1, CMax: 2, CMin: 0.75, Delta: 1e-6}}}
	evs := []jobs.Event{{Seq: 1, Time: t0, State: jobs.Queued}, {Seq: 2, Time: t0.Add(time.Hour), State: jobs.Succeeded}}
	later := t0.Add(time.Hour).Format(time.RFC3339)
	if page := write(t, Report{Job: j, Events: evs}); strings.Contains(page, later) || !strings.Contains(page, "E[T] = 10") {
		t.Errorf("the modeler's DP-HyPO report shows the time %s, or lacks E[T] = 10", later)
	}
	if page := write(t, Report{Job: j, Events: evs, Trace: &jobs.Trace{}}); !strings.Contains(page, later) {
		t.Errorf("the operator's DP-HyPO report lacks the time %s", later)
	}
}
