package curatorclient_test

import (
	"bufio"
	"context"
	"errors"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/study"
)

// startCuratorOn serves the CSV at path in-process with exact answers, named name (""
// for the file's name) and with that name as its dataset id ("diabetes" for "").
func startCuratorOn(t *testing.T, path, name string) string {
	t.Helper()
	return curatortest.Start(t, curatortest.Options{
		DataPath: path, DatasetName: name, DatasetID: name, Output: curator.OutputPrivacy{Mechanism: "none"},
	}).Addr
}

// headOfDiabetes writes the header and the first n rows of the shipped diabetes data to
// a file of the same name in a new directory: the same dataset name, fewer rows.
func headOfDiabetes(t *testing.T, n int) string {
	t.Helper()
	f, err := os.Open(curatortest.Diabetes)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b strings.Builder
	sc := bufio.NewScanner(f)
	for k := 0; k <= n && sc.Scan(); k++ {
		b.WriteString(sc.Text() + "\n")
	}
	path := filepath.Join(t.TempDir(), "diabetes.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// closedAddr is a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestRunStudyResumeChecksCurator stops a study, then resumes it against curators that
// are not the one it ran on — another dataset name, the same name with other rows, the
// right curator charging another identity than the one that paid for the release, and an
// address nothing listens on — and checks that each is refused promptly with an error
// naming the cause, that nothing was queried or recorded, and that the stored connection
// was left as it was; the right curator then resumes it.
func TestRunStudyResumeChecksCurator(t *testing.T) {
	ctx := context.Background()
	diabetes := curatortest.Diabetes
	addr := startCuratorOn(t, diabetes, "")
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	conn := study.Connection{Curator: addr, Identity: "owner"}
	cfg := modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 10, InitialIndex: 0}
	sctx, cancel := context.WithCancel(ctx)
	scfg := cfg
	scfg.Progress = stopAfter(3, cancel)
	_, err = modeler.RunStudy(sctx, curatorclient.New(curatortest.Client(t, addr, "owner")), store, "s", conn, scfg)
	cancel()
	if err == nil {
		t.Fatal("RunStudy stopped after iteration 3: no error")
	}
	st, err := store.Get(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if st.Release == nil || st.Release.Identity != "owner" {
		t.Fatalf("stored release %+v, want one charged to identity owner", st.Release)
	}
	recorded, err := store.Observations(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}

	renamed := startCuratorOn(t, diabetes, "other")
	shorter := startCuratorOn(t, headOfDiabetes(t, 100), "")
	closed := closedAddr(t)
	for _, tc := range []struct {
		name, addr, identity, want string
	}{
		{"another dataset", renamed, "owner", `runs on dataset id "diabetes", but the curator at ` + renamed + ` serves dataset id "other"`},
		{"same name, other rows", shorter, "owner", `serves "diabetes" of 100 rows`},
		{"another identity charged", addr, "intruder", `charges this connection to "intruder"`},
		{"nothing listening", closed, "owner", "cannot reach the curator"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The claimed identity is the stored one; what the curator charges is not.
			other := study.Connection{Curator: tc.addr, Identity: "owner"}
			cc := &crashingClient{CuratorServiceClient: curatortest.Client(t, tc.addr, tc.identity)}
			start := time.Now()
			_, err := modeler.RunStudy(ctx, curatorclient.New(cc), store, "s", other, modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 12, InitialIndex: 0})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("RunStudy against %s: err = %v, want %q", tc.name, err, tc.want)
			}
			if errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 10*time.Second {
				t.Errorf("RunStudy against %s took %s (%v), want a prompt refusal", tc.name, time.Since(start), err)
			}
			if cc.calls != 0 {
				t.Errorf("RunStudy against %s sent %d queries, want none", tc.name, cc.calls)
			}
			got, err := store.Get(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			obs, err := store.Observations(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if got.Connection != conn || got.Settings.Iterations != 10 || len(obs) != len(recorded) {
				t.Errorf("after the refusal: connection %+v, T = %d, %d observations; want %+v, 10, %d unchanged",
					got.Connection, got.Settings.Iterations, len(obs), conn, len(recorded))
			}
		})
	}
	res, err := modeler.RunStudy(ctx, curatorclient.New(curatortest.Client(t, addr, "owner")), store, "s", conn, cfg)
	if err != nil {
		t.Fatalf("RunStudy against its own curator: %v", err)
	}
	if res.Iterations != 10 {
		t.Errorf("resumed study made %d iterations, want 10", res.Iterations)
	}
}
