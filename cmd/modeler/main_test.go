package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/server"
)

// startDiabetesCurator starts an in-process curator over the shipped diabetes data, with
// private answers (the default Laplace mechanism, ε = 1, on [0, 400]).
func startDiabetesCurator(t *testing.T) *server.Server {
	t.Helper()
	return startDiabetesCuratorOutput(t, curator.OutputPrivacy{Lower: 0, Upper: 400})
}

func startDiabetesCuratorOutput(t *testing.T, out curator.OutputPrivacy) *server.Server {
	t.Helper()
	return curatortest.Start(t, curatortest.Options{Budget: ledger.Cost{Epsilon: 10, Delta: 1e-3}, Output: out}).Server
}

// TestRunJSON runs the modeler command against an in-process curator and checks the
// contract of --json: the last line of stdout is one JSON object with the study.
func TestRunJSON(t *testing.T) {
	srv := startDiabetesCurator(t)
	var stdout, stderr bytes.Buffer
	err := run([]string{"run", "--curator", srv.Addr(), "--identity", "cli-test", "--r", "5", "--epsilon", "2",
		"--delta", "1e-4", "--iterations", "12", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	var res struct {
		BestIndex  *int      `json:"best_index"`
		BestValue  *float64  `json:"best_value"`
		Iterations int       `json:"iterations"`
		Queried    []int     `json:"queried"`
		Values     []float64 `json:"values"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("last line of stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if res.BestIndex == nil || res.BestValue == nil || res.Iterations != 12 || len(res.Queried) != 12 || len(res.Values) != 12 {
		t.Fatalf("JSON result = %+v; want best_index, best_value and 12 iterations, queried and values", res)
	}
	best := res.Values[0]
	for _, v := range res.Values {
		best = max(best, v)
	}
	if *res.BestValue != best {
		t.Errorf("best_value = %g, want the maximum of values %g", *res.BestValue, best)
	}
	// The result leads with the recommended row, its posterior mean ± sd and the answers'
	// noise (Laplace at ε = 1 on [0, 400]: sd √2·b with package dp's scale b, which
	// rounds 400/ε up to its lattice: within 1e-5 of √2·400 = 565.7), then the highest answer,
	// labelled a noisy answer; the JSON holds the same figures.
	var rec struct {
		Index  int         `json:"recommended_index"`
		Mean   float64     `json:"recommended_mean"`
		SD     float64     `json:"recommended_sd"`
		Noise  float64     `json:"answer_noise_sd"`
		Range  *[2]float64 `json:"answers_range"`
		Interr *bool       `json:"interrupted"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rec); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Queried, rec.Index) || !(rec.SD > 0) || math.Abs(rec.Noise/(math.Sqrt2*400)-1) > 1e-5 ||
		rec.Range == nil || *rec.Range != [2]float64{0, 400} || rec.Interr == nil || *rec.Interr {
		t.Errorf("JSON recommendation %+v: want a queried row, sd > 0, answer_noise_sd √2·400, answers_range [0, 400], interrupted false", rec)
	}
	if last := lines[len(lines)-1]; strings.Index(last, `"recommended_index"`) > strings.Index(last, `"best_index"`) {
		t.Errorf("JSON lists best_index before recommended_index: %s", last)
	}
	for k, want := range []string{
		fmt.Sprintf("dataset diabetes: recommended row %d: posterior mean %.4g ± %.3g (1 sd), the highest posterior mean among the ", rec.Index, rec.Mean, rec.SD),
		"answer noise: sd 566 per answer (laplace mechanism) against the target's range [0, 400]: 1.4 times its width; a single answer says little about its row",
		fmt.Sprintf("highest noisy answer: %.6g at row %d (a noisy answer, not the row's value)", *res.BestValue, *res.BestIndex),
	} {
		if k >= len(lines) || !strings.HasPrefix(lines[k], want) {
			t.Errorf("stdout line %d does not start with %q:\n%s", k+1, want, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "iteration  12/12") {
		t.Errorf("no progress line for the last iteration on stderr:\n%s", stderr.String())
	}
	// The guarantees received are printed and in the JSON.
	for _, want := range []string{
		"projection (mechanism gaussian): (ε=2, δ=0.0001)-DP under the feature-unit neighbour relation",
		"answers (mechanism laplace): each answer (ε=1, δ=0)-DP under the record neighbour relation (one record replaced by any other): mechanism laplace, the recorded value clipped to [0, 400]",
	} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout.String())
		}
	}
	if strings.Contains(stdout.String(), "exact and unprotected") {
		t.Errorf("private answers reported as exact:\n%s", stdout.String())
	}
	var prot struct {
		Protection modeler.Protection `json:"protection"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &prot); err != nil {
		t.Fatal(err)
	}
	if p := prot.Protection; p.DatasetID != "diabetes" || p.ProjectionMechanism != "gaussian" || p.ProjectionRelation != "feature-unit" ||
		p.AnswersMechanism != "laplace" || p.AnswersRelation != "record" || p.ExactAnswers ||
		!strings.HasPrefix(p.ProjectionGuarantee, "(ε=2, δ=0.0001)-DP") || !strings.HasPrefix(p.AnswersGuarantee, "each answer (ε=1, δ=0)-DP") {
		t.Errorf("JSON protection = %+v", p)
	}
	// The answers cost one ε_out for all 12 rows: 2 + 1.
	if !strings.Contains(stdout.String(), "privacy spent by this identity: ε=3, δ=0.0001") {
		t.Errorf("stdout does not report ε = 2 + 1 spent:\n%s", stdout.String())
	}

	for _, bad := range [][]string{{"run", "--iterations", "0", "--curator", srv.Addr()}, {"bogus"}, {"run", "--kernel", "cubic"}} {
		if err := run(bad, &stdout, &stderr); err == nil {
			t.Errorf("run(%q) succeeded, want an error", bad)
		}
	}
}

// TestRunExactAnswersStated: against a curator releasing exact answers, the modeler says
// that the answers it received have no guarantee, in its output and its JSON.
func TestRunExactAnswersStated(t *testing.T) {
	srv := startDiabetesCuratorOutput(t, curator.OutputPrivacy{Mechanism: "none"})
	var stdout, stderr bytes.Buffer
	err := run([]string{"run", "--curator", srv.Addr(), "--identity", "cli-exact", "--r", "3", "--epsilon", "1",
		"--delta", "1e-4", "--iterations", "5", "--quiet", "--json"}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{
		"answers (mechanism none): no guarantee (ε = ∞): exact answers (output privacy none, the operator's explicit choice); each answer is the queried record's target value as it is",
		"note: the answers this study received are exact and unprotected (ε = ∞); the projection's guarantee does not cover them",
		"the query answers are NOT covered: they are exact, with no guarantee (ε = ∞)",
		`"exact_answers":true`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
