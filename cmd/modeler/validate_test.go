package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestRunBadSettingsSpendNothing runs `modeler run` with GP settings, an initial row or an
// iteration count that cannot work on the 442-row diabetes data, and checks that each is
// refused with an error naming it and that the identity's budget is left unspent: the
// projection must not be charged for a study that cannot run.
func TestRunBadSettingsSpendNothing(t *testing.T) {
	srv := startDiabetesCurator(t)
	common := []string{"run", "--curator", srv.Addr(), "--identity", "i1", "--r", "3", "--epsilon", "0.5", "--delta", "1e-5", "--quiet"}
	for _, tc := range []struct {
		flags []string
		want  string
	}{
		{[]string{"--lengthscale", "-1"}, "--lengthscale -1: must be positive"},
		{[]string{"--noise-variance", "-1"}, "--noise-variance -1: must be positive"},
		{[]string{"--signal-variance", "-1"}, "--signal-variance -1: must be positive"},
		{[]string{"--beta", "-1"}, "--beta -1: must be ≥ 0"},
		{[]string{"--delta-ucb", "2"}, "--delta-ucb 2: must lie in (0, 1)"},
		{[]string{"--initial-index", "1000"}, "initial index 1000 is out of range [0, 442)"},
		{[]string{"--iterations", "500"}, "500 iterations exceed the 442 rows"},
		{[]string{"--iterations", "500", "--study", "too-long", "--studies-dir", t.TempDir()}, "500 iterations exceed the 442 rows"},
	} {
		var stdout, stderr bytes.Buffer
		args := append(append([]string{}, common...), tc.flags...)
		err := run(args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run(%q): err = %v, want %q", tc.flags, err, tc.want)
		}
	}
	if got := spent(t, srv.Addr(), "i1"); got.GetEpsilonSpent() != 0 || got.GetDeltaSpent() != 0 {
		t.Errorf("after refused runs identity i1 spent ε = %g, δ = %g; want nothing", got.GetEpsilonSpent(), got.GetDeltaSpent())
	}
}

// spent returns identity's budget as the curator at addr reports it.
func spent(t *testing.T, addr, identity string) *curatorv1.Budget {
	t.Helper()
	conn, err := transport.Dial(addr, transport.ClientConfig{Identity: identity})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	b, err := curatorv1.NewCuratorServiceClient(conn).GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return b.GetBudget()
}

// TestRefusedNewStudyCanBeRetried checks that a study refused before its projection was
// charged keeps no settings: running it again under the same name with corrected
// settings works, and is charged once.
func TestRefusedNewStudyCanBeRetried(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	common := []string{"run", "--curator", srv.Addr(), "--identity", "i2", "--r", "3", "--epsilon", "0.5", "--delta", "1e-5",
		"--quiet", "--study", "retry", "--studies-dir", dir, "--iterations", "5"}
	var stdout, stderr bytes.Buffer
	if err := run(append(append([]string{}, common...), "--initial-index", "1000"), &stdout, &stderr); err == nil {
		t.Fatal("initial index 1000 of 442 rows: no error")
	}
	if err := run(append(append([]string{}, common...), "--initial-index", "7"), &stdout, &stderr); err != nil {
		t.Fatalf("the same study with a valid initial index: %v", err)
	}
	if got := spent(t, srv.Addr(), "i2").GetEpsilonSpent(); got != 1.5 {
		t.Errorf("identity i2 spent ε = %g, want 1.5 (one projection of 0.5 and the answers' one ε_out of 1)", got)
	}
	// Once the study holds a release its settings are fixed again.
	if err := run(append(append([]string{}, common...), "--initial-index", "8"), &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("changing a released study's initial index: %v, want a refusal", err)
	}
}

// TestUnreleasedStudyKeepsItsReleaseRequest checks that a study without a stored
// release may change its other settings but not what it asks the curator to release
// (r, ε, δ, label): the projection may have been charged before it was lost on the way.
func TestUnreleasedStudyKeepsItsReleaseRequest(t *testing.T) {
	srv := startDiabetesCurator(t)
	dir := t.TempDir()
	common := []string{"run", "--curator", srv.Addr(), "--identity", "i3", "--delta", "1e-5",
		"--quiet", "--study", "keep", "--studies-dir", dir, "--iterations", "5"}
	var stdout, stderr bytes.Buffer
	if err := run(append(append([]string{}, common...), "--r", "3", "--epsilon", "0.5", "--initial-index", "1000"), &stdout, &stderr); err == nil {
		t.Fatal("initial index 1000 of 442 rows: no error")
	}
	err := run(append(append([]string{}, common...), "--r", "4", "--epsilon", "0.5", "--initial-index", "7"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "other settings") {
		t.Errorf("changing r of a study without a release: %v, want a refusal", err)
	}
	if got := spent(t, srv.Addr(), "i3").GetEpsilonSpent(); got != 0 {
		t.Errorf("identity i3 spent ε = %g, want 0", got)
	}
}
