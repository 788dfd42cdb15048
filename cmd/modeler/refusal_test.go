package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/refusal"
)

// ownFlags returns the flags of the modeler command args (its -h usage).
func ownFlags(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(append(args, "-h"), &stdout, &stderr); cli.ExitCode(err) != 0 {
		t.Fatalf("%v -h: %v", args, err)
	}
	flags := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`).FindAllStringSubmatch(stdout.String(), -1) {
		flags[m[1]] = true
	}
	if len(flags) < 5 {
		t.Fatalf("%v -h lists %d flags: %s", args, len(flags), stdout.String())
	}
	return flags
}

// smallCSV writes a data file of 30 rows, three features and a target y in [0, 5].
func smallCSV(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,c,y\n")
	for i := range 30 {
		fmt.Fprintf(&b, "%d,%d,%d,%g\n", i%7, i%5, i%3, float64(i%6))
	}
	path := filepath.Join(t.TempDir(), "small.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRefusals runs the modeler against in-process curators that refuse, one reason at a
// time, and checks what a person is told: the refusal is recognised by its ErrorInfo
// reason (errors.Is with package refusal's value, never the message), the exit status is
// 3, the text says what to do with the figures the curator sent, and every flag it names
// is one of the modeler's own (none of the curator's).
func TestRefusals(t *testing.T) {
	diabetes := curatortest.DiabetesSchema(t)
	laplace := curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1}
	study := func(addr string, extra ...string) []string {
		return append([]string{"run", "--curator", addr, "--identity", "vendor", "--iterations", "5", "--initial-index", "0"}, extra...)
	}
	runFlags := ownFlags(t, "run")
	jobFlags := ownFlags(t, "job", "kusner")
	// Flags named as "the curator's --flag": its operator's.
	curatorFlags := map[string]bool{"budget-epsilon": true, "budget-delta": true, "dataset-budget-epsilon": true}

	// A curator whose identity budget holds ε = 3: a study of ε 2.5 plus the answers' 1
	// does not fit its quote; r = 11 on d = 10 is refused by the curator.
	small := curatortest.Start(t, curatortest.Options{Scaling: diabetes, Budget: ledger.Cost{Epsilon: 3, Delta: 1e-3}, Output: laplace})
	// A dataset cap of ε = 2.5 that another identity's study (ε 1.5 plus the answers' 1)
	// spends.
	shared := curatortest.Start(t, curatortest.Options{Scaling: diabetes, DatasetBudget: ledger.Cost{Epsilon: 2.5, Delta: 1e-3}, Output: laplace})
	if err := run([]string{"run", "--curator", shared.Addr, "--identity", "other", "--iterations", "2", "--initial-index", "0",
		"--r", "3", "--epsilon", "1.5", "--delta", "1e-7"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("the study spending the dataset cap: %v", err)
	}
	// δ budget 0.
	noDelta := curatortest.Start(t, curatortest.Options{Scaling: diabetes, Budget: ledger.Cost{Epsilon: 3}, Output: laplace})
	// Exact answers for at most 2 rows.
	exact := curatortest.Start(t, curatortest.Options{Scaling: diabetes, Output: curator.OutputPrivacy{Mechanism: "none"},
		Configure: func(c *config.Config) { c.ExactAnswersMaxRows = 2 }})
	// The lifted mechanism with 24 MiB for releases: r = 1024 needs more.
	memory := curatortest.Start(t, curatortest.Options{DataPath: smallCSV(t), Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone},
		DatasetID: "small", Output: curator.OutputPrivacy{Lower: 0, Upper: 5},
		Configure: func(c *config.Config) { c.ProjectionMechanism, c.ReleaseMemory = projection.MechanismLifted, 24<<20 }})
	// Jobs on the breast-cancer data with a budget of ε = 5: Kusner at ε = 1 is forecast
	// uninformative; at ε = 4 (cost 2ε = 8) it is beyond the budget.
	sc, err := dataset.ParseScaling("schema:" + curatortest.ExampleData("breast_cancer.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	jobs := curatortest.Start(t, curatortest.Options{DataPath: curatortest.ExampleData("breast_cancer.csv"), Target: "benign", Scaling: sc,
		Budget: ledger.Cost{Epsilon: 5, Delta: 0.1}, Jobs: config.JobsConfig{Enabled: true}, DatasetID: "breast-cancer",
		Output: curator.OutputPrivacy{Lower: 0, Upper: 1}})
	kusner := func(eps string, extra ...string) []string {
		return append([]string{"job", "kusner", "--curator", jobs.Addr, "--identity", "vendor", "--algorithm", "1",
			"--grid", "lambda=log:1e-4:10:8", "--iterations", "5", "--epsilon", eps, "--delta", "1e-3"}, extra...)
	}

	for _, tc := range []struct {
		name  string
		args  []string
		flags map[string]bool
		is    error
		want  []string // in the error text or stderr (the quote)
	}{
		{"study unaffordable", study(small.Addr, "--r", "3", "--epsilon", "2.5", "--delta", "1e-7"), runFlags,
			modeler.ErrStudyUnaffordable, []string{"does not fit the budget", "This identity's budget leaves ε=3, δ=0.001: ask for less",
				"ask the curator's operator to raise it (the curator's --budget-epsilon)"}},
		{"dataset cap spent", study(shared.Addr, "--r", "3", "--epsilon", "0.5", "--delta", "1e-7"), runFlags,
			modeler.ErrStudyUnaffordable, []string{"where the dataset's cap, shared by every identity, leaves ε=0,", "not your own budget",
				"cost under the feature-unit relation: ε=1.5, δ=1e-07; the dataset's cap, shared by every identity, leaves ε=0,",
				"asking for less will not help", "the curator's --dataset-budget-epsilon"}},
		{"dimension above features", study(small.Addr, "--r", "11", "--allow-r-above-d", "--epsilon", "0.5", "--delta", "1e-7"), runFlags,
			refusal.ErrDimensionAboveFeatures, []string{"ask for a smaller --r"}},
		{"zero δ budget", study(noDelta.Addr, "--r", "3", "--epsilon", "0.5", "--delta", "1e-7"), runFlags,
			refusal.ErrDeltaBudgetZero, []string{"δ budget is 0", "not a spent budget", "ask the curator's operator for a δ budget"}},
		{"exact-row limit", study(exact.Addr, "--r", "3", "--epsilon", "0.5", "--delta", "1e-7"), runFlags,
			refusal.ErrExactRowLimit, []string{"at most 2 distinct rows exactly", "2 have been answered and this request asks for 1 more", "fewer --iterations"}},
		{"memory limit", study(memory.Addr, "--r", "1024", "--allow-r-above-d", "--epsilon", "0.5", "--delta", "1e-7"), runFlags,
			refusal.ErrMemoryLimit, []string{"dimension 1024 needs", "admits 24 MiB", "ask for --r"}},
		{"Kusner release uninformative", kusner("1", "--idempotency-key", "u1"), jobFlags,
			refusal.ErrUninformative, []string{"see the forecast above"}},
		{"budget exceeded", kusner("4", "--idempotency-key", "b1"), jobFlags,
			refusal.ErrBudgetExceeded, []string{"refused by this identity's privacy budget", "ε=8, δ=0.002 asked", "nothing was charged",
				"ask the curator's operator to raise it (the curator's --budget-epsilon)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(tc.args, &stdout, &stderr)
			if !errors.Is(err, tc.is) {
				t.Fatalf("run: %v\nstderr:\n%s\nwant an error that is %q", err, stderr.String(), tc.is)
			}
			if got := cli.ExitCode(err); got != exitRefused {
				t.Errorf("exit status %d, want %d", got, exitRefused)
			}
			text := errorLine(err)
			for _, w := range tc.want {
				if !strings.Contains(text+"\n"+stderr.String(), w) {
					t.Errorf("neither the error text nor stderr says %q:\n%s\n%s", w, text, stderr.String())
				}
			}
			for _, m := range regexp.MustCompile(`(^|[^-\w])(the curator's )?--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(text+stderr.String(), -1) {
				if m[2] == "" && !tc.flags[m[3]] || m[2] != "" && !curatorFlags[m[3]] {
					t.Errorf("the modeler's output names --%s, not one of its own flags nor one of the curator's operator's:\n%s\n%s", m[3], text, stderr.String())
				}
			}
		})
	}
}

// TestLedgerUnavailableIsTransient: a refusal for LEDGER_UNAVAILABLE, RELEASE_IN_PROGRESS
// or MEMORY_LIMIT after a wait (with held_bytes) says to run the command again and exits 1, not exitRefused (which says asking again
// unchanged would be refused again).
func TestLedgerUnavailableIsTransient(t *testing.T) {
	for _, tc := range []struct {
		reason refusal.Reason
		meta   map[string]string
		is     error
		says   string
	}{
		{refusal.LedgerUnavailable, nil, refusal.ErrLedgerUnavailable, "cannot reach its privacy ledger"},
		{refusal.ReleaseInProgress, nil, refusal.ErrReleaseInProgress, "computing this same release for another request"},
		{refusal.MemoryLimit, map[string]string{"needed_bytes": "1048576", "available_bytes": "16777216", "held_bytes": "16252928"},
			refusal.ErrMemoryLimit, "memory for releases was taken by other releases"},
	} {
		e := &refusal.Error{Reason: tc.reason, Metadata: tc.meta, Err: errors.New("rpc error: the curator's message")}
		err := explainRefusal(fmt.Errorf("modeler: query: %w", e))
		if !errors.Is(err, tc.is) {
			t.Errorf("%v is not %v", err, tc.is)
		}
		if got := cli.ExitCode(err); got != 1 {
			t.Errorf("%s: exit status %d, want 1", tc.reason, got)
		}
		for _, w := range []string{"modeler: query: rpc error: the curator's message", tc.says, "run the same command again"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error text does not say %q:\n%s", tc.reason, w, err)
			}
		}
		if again := explainRefusal(err); again != err {
			t.Errorf("%s: explainRefusal twice: %v, want the same error", tc.reason, again)
		}
	}
}

// TestRefusalHintFigures checks the texts of refusals the in-process curators above do
// not produce: the dataset's shared budget, the whole-patient cap, a release with no
// finite whole-patient figure, a memory limit no dimension fits, a Kusner job no ε makes
// informative, and a reason this modeler does not know (shown as it came, exit 1).
func TestRefusalHintFigures(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    *refusal.Error
		want string // "" for no hint
	}{
		{"dataset budget", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "dataset", "requested_epsilon": "1",
			"requested_delta": "0", "remaining_epsilon": "0.5", "remaining_delta": "0", "relation": "feature-unit"}},
			"the dataset's privacy budget, shared by every identity (ε=1, δ=0 asked, ε=0.5, δ=0 left under the feature-unit relation)"},
		{"dataset budget, ε left", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "dataset", "requested_epsilon": "1",
			"requested_delta": "0", "remaining_epsilon": "0.5", "remaining_delta": "0"}},
			"Ask for at most that, or ask the curator's operator to raise it (the curator's --dataset-budget-epsilon)."},
		{"dataset budget spent", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "dataset", "requested_epsilon": "1",
			"requested_delta": "0", "remaining_epsilon": "0", "remaining_delta": "0"}},
			"is spent: asking for less will not help.\n  Only the curator's operator can raise it, with the curator's --dataset-budget-epsilon."},
		{"dataset δ spent", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "dataset", "requested_epsilon": "0.1",
			"requested_delta": "1e-06", "remaining_epsilon": "2", "remaining_delta": "0"}},
			"with the curator's --dataset-budget-delta."},
		{"whole patient, dataset", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "dataset", "budget": "whole-patient",
			"requested_epsilon": "2", "requested_delta": "1e-05", "remaining_epsilon": "0", "remaining_delta": "0"}},
			"with the curator's --patient-dataset-budget-epsilon."},
		{"whole patient", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"scope": "identity", "budget": "whole-patient",
			"requested_epsilon": "2", "requested_delta": "1e-05", "remaining_epsilon": "1", "remaining_delta": "0"}},
			"refused by the curator's cap on what one whole patient can lose to this identity (ε=2, δ=1e-05 asked, ε=1, δ=0 left)"},
		{"no finite whole-patient figure", &refusal.Error{Reason: refusal.BudgetExceeded, Metadata: map[string]string{"budget": "whole-patient",
			"requested_epsilon": "+Inf"}}, "(the release has no finite whole-patient guarantee)"},
		{"no dimension fits", &refusal.Error{Reason: refusal.MemoryLimit, Metadata: map[string]string{"needed_bytes": "104857600",
			"available_bytes": "16777216", "dimension": "2", "max_dimension": "0"}},
			"a projection of dimension 2 needs 100 MiB of memory while the curator computes it, and it admits 16 MiB for its releases; no dimension fits"},
		{"Kusner, no ε", &refusal.Error{Reason: refusal.Uninformative, Metadata: map[string]string{"epsilon_needed": "+Inf"}},
			"no better than a uniform pick at any ε"},
		{"Kusner, ε needed", &refusal.Error{Reason: refusal.Uninformative, Metadata: map[string]string{"epsilon_needed": "3.6961"}},
			"ask for --epsilon 3.696 or more"},
		{"unknown reason", &refusal.Error{Reason: "SOMETHING_NEW"}, ""},
	} {
		tc.e.Err = errors.New("rpc error: the curator's message")
		err := explainRefusal(fmt.Errorf("modeler: query: %w", tc.e))
		if tc.want == "" {
			if cli.ExitCode(err) != 1 || err.Error() != "modeler: query: rpc error: the curator's message" {
				t.Errorf("%s: %v (exit %d), want the error as it came, exit 1", tc.name, err, cli.ExitCode(err))
			}
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || cli.ExitCode(err) != exitRefused {
			t.Errorf("%s: %v (exit %d)\nwant it to say %q, exit %d", tc.name, err, cli.ExitCode(err), tc.want, exitRefused)
		}
	}
}
