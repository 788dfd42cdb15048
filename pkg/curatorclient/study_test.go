package curatorclient_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/modeler"
	"math"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/study"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

const answerEps = 0.01

// startCurator serves the shipped diabetes data in-process, as cmd/curator does, with
// answers released under the Laplace mechanism so that every answer has a price.
func startCurator(t *testing.T) string {
	t.Helper()
	return startCuratorOutput(t, curator.OutputPrivacy{Mechanism: "laplace", Epsilon: answerEps, Lower: 0, Upper: 400})
}

// startCuratorOutput is startCurator with answers released as out says.
func startCuratorOutput(t *testing.T, out curator.OutputPrivacy) string {
	t.Helper()
	return curatortest.Start(t, curatortest.Options{Output: out}).Addr
}

// crashingClient passes calls through and fails the crashAt-th Query after the curator
// answered it: the answers were released but never reach the study, as when the modeler
// dies between receiving and recording them.
type crashingClient struct {
	curatorv1.CuratorServiceClient
	crashAt, calls int
}

var errCrash = errors.New("simulated crash after the answer")

func (c *crashingClient) Query(ctx context.Context, in *curatorv1.QueryRequest, opts ...grpc.CallOption) (*curatorv1.QueryResponse, error) {
	resp, err := c.CuratorServiceClient.Query(ctx, in, opts...)
	c.calls++
	if err == nil && c.calls == c.crashAt {
		return nil, errCrash
	}
	return resp, err
}

// TestRunStudyResume interrupts a batch study twice after answers were released but not
// recorded, resumes it, and checks that it ends as an uninterrupted study on the same
// release with the same initial row (same rows in the same order), that nothing was paid
// twice, that changed settings are refused, and that a finished study is not run again.
func TestRunStudyResume(t *testing.T) {
	ctx := context.Background()
	addr := startCurator(t)
	client := curatortest.Client(t, addr, "resume-test")
	store, err := study.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	conn := study.Connection{Curator: addr, Identity: "resume-test"}
	cfg := modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 15, Batch: 3, InitialIndex: -1}

	// Round 1 is the initial row, rounds 2.. have 3 rows. Crash in round 3, then in round 2
	// of the resumed run (round 4 of the study).
	for _, tc := range []struct {
		crashAt, wantStored int
	}{{3, 1 + 3}, {2, 1 + 3 + 3}} {
		_, err := modeler.RunStudy(ctx, curatorclient.New(&crashingClient{CuratorServiceClient: client, crashAt: tc.crashAt}), store, "s", conn, cfg)
		if !errors.Is(err, errCrash) {
			t.Fatalf("RunStudy with a crash at query %d: err = %v, want the crash", tc.crashAt, err)
		}
		obs, err := store.Observations(ctx, "s")
		if err != nil {
			t.Fatal(err)
		}
		if len(obs) != tc.wantStored {
			t.Fatalf("after a crash at query %d: %d observations stored, want %d", tc.crashAt, len(obs), tc.wantStored)
		}
	}
	var resumed []modeler.Resume
	rcfg := cfg
	rcfg.Resumed = func(r modeler.Resume) { resumed = append(resumed, r) }
	res, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, rcfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(resumed) != 1 || resumed[0].Iterations != 7 || resumed[0].Projection {
		t.Errorf("Resumed calls = %+v, want one, from 7 stored iterations and the stored projection", resumed)
	}
	if res.Iterations != 15 || len(res.Queried) != 15 || res.Rounds != 1+5 || res.Study != "s" {
		t.Errorf("resumed study: %d iterations, %d queried, %d rounds, study %q; want 15, 15, 6, s", res.Iterations, len(res.Queried), res.Rounds, res.Study)
	}
	st, err := store.Get(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Done || st.LastError != "" || st.InitialIndex != res.Queried[0] {
		t.Errorf("stored study: done %v, error %q, initial %d; want done, no error, initial %d", st.Done, st.LastError, st.InitialIndex, res.Queried[0])
	}

	// An uninterrupted study on the same release and initial row chooses the same rows.
	ucfg := cfg
	ucfg.InitialIndex = st.InitialIndex
	ref, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "uninterrupted", conn, ucfg)
	if err != nil {
		t.Fatal(err)
	}
	if ref.ReleaseID != res.ReleaseID {
		t.Fatalf("uninterrupted study got release %s, want the same %s", ref.ReleaseID, res.ReleaseID)
	}
	for k := range ref.Queried {
		if ref.Queried[k] != res.Queried[k] || ref.Values[k] != res.Values[k] {
			t.Fatalf("resumed study queried %v, uninterrupted %v; want the same sequence", res.Queried, ref.Queried)
		}
	}
	distinct := map[int]bool{}
	for _, i := range res.Queried {
		distinct[i] = true
	}
	if len(distinct) != 15 {
		t.Errorf("%d distinct rows in 15 queries, want 15", len(distinct))
	}
	b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// One projection and one charge for all the identity's answers (parallel
	// composition over the distinct rows), nothing for the replays.
	want := math.Exp(2) + answerEps
	if got := b.GetBudget().GetEpsilonSpent(); math.Abs(got-want) > 1e-9 {
		t.Errorf("spent ε = %.12g, want %.12g (one projection and one ε_out for %d answers)", got, want, len(distinct))
	}
	// The resumed result states the protection stored with the release.
	if p := res.Protection; p.DatasetID != "diabetes" || p.ProjectionMechanism != "gaussian" || p.AnswersMechanism != "laplace" || p.ExactAnswers ||
		!strings.Contains(p.ProjectionGuarantee, "under the feature-unit neighbour relation") ||
		!strings.Contains(p.AnswersGuarantee, "under the record neighbour relation") {
		t.Errorf("protection of the resumed study = %+v", p)
	}

	// Changed settings are refused with the difference spelled out.
	bad := cfg
	bad.R, bad.Batch = 6, 2
	if _, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, bad); err == nil || !strings.Contains(err.Error(), "r: stored 5, given 6") ||
		!strings.Contains(err.Error(), "batch: stored 3, given 2") {
		t.Errorf("RunStudy with r = 6, batch = 2: err = %v, want both differences named", err)
	}
	other := conn
	other.Identity = "someone-else"
	if _, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", other, cfg); err == nil || !strings.Contains(err.Error(), "identity") {
		t.Errorf("RunStudy as another identity: err = %v, want an identity error", err)
	}
	// A finished study returns its result without a query.
	again, err := modeler.RunStudy(ctx, curatorclient.New(&crashingClient{CuratorServiceClient: client, crashAt: 1}), store, "s", conn, cfg)
	if err != nil || again.Iterations != 15 || again.BestValue != res.BestValue {
		t.Errorf("RunStudy of a finished study = %+v, %v; want its 15 iterations and best %g", again, err, res.BestValue)
	}
	unlock, err := store.Lock("s")
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if _, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, cfg); !errors.Is(err, study.ErrLocked) {
		t.Errorf("RunStudy of a locked study: err = %v, want ErrLocked", err)
	}
}

// TestRunBatch checks that Run sends one Query request per round: T of them for q = 1,
// 1 + ⌈(T − 1)/q⌉ for q > 1 (the initial row is a round of its own).
func TestRunBatch(t *testing.T) {
	ctx := context.Background()
	client := curatortest.Client(t, startCurator(t), "batch-test")
	for _, tc := range []struct {
		q, rounds int
	}{{1, 10}, {3, 1 + 3}, {4, 1 + 3}} {
		cc := &crashingClient{CuratorServiceClient: client}
		res, err := modeler.Run(ctx, curatorclient.New(cc), modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 10, Batch: tc.q, InitialIndex: 0})
		if err != nil {
			t.Fatal(err)
		}
		if cc.calls != tc.rounds || res.Rounds != tc.rounds || len(res.Queried) != 10 {
			t.Errorf("Run(q = %d): %d Query calls, %d rounds, %d queried; want %d, %d, 10", tc.q, cc.calls, res.Rounds, len(res.Queried), tc.rounds, tc.rounds)
		}
	}
	if _, err := modeler.Run(ctx, curatorclient.New(client), modeler.Config{R: 5, Epsilon: 1, Delta: 1e-4, Iterations: 10, Batch: -1}); err == nil {
		t.Error("Run(batch = −1): no error")
	}
}

// stopAfter cancels the run once iteration n has been observed (and recorded), as a
// person pressing Ctrl-C would.
func stopAfter(n int, cancel context.CancelFunc) func(modeler.Step) {
	return func(s modeler.Step) {
		if s.Iteration == n {
			cancel()
		}
	}
}

// TestRunStudyFitEveryResume stops studies that refit their hyperparameters (FitEvery = 4)
// twice part-way (after iterations 4 and 10; for q = 1 the second is between refits),
// resumes them, and
// checks that they choose the same rows as an uninterrupted study on the same release
// and initial row, end with the same hyperparameters, and that the fit moved the
// lengthscale away from the fixed default on the diabetes data (answered exactly, so that
// the likelihood sees the data rather than the Laplace noise of tiny ε). With q = 3
// rounds end at t = 1, 4, 7, …, so refits fall at 4, 10 (crossing 8), 13 (crossing 12)
// and 16.
func TestRunStudyFitEveryResume(t *testing.T) {
	ctx := context.Background()
	addr := startCuratorOutput(t, curator.OutputPrivacy{Mechanism: "none"})
	for _, q := range []int{1, 3} {
		t.Run(fmt.Sprintf("q=%d", q), func(t *testing.T) {
			id := fmt.Sprintf("fit-resume-%d", q)
			client := curatortest.Client(t, addr, id)
			store, err := study.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			conn := study.Connection{Curator: addr, Identity: id}
			cfg := modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 16, Batch: q, FitEvery: 4, InitialIndex: -1}
			for _, stop := range []int{4, 10} {
				sctx, cancel := context.WithCancel(ctx)
				scfg := cfg
				scfg.Progress = stopAfter(stop, cancel)
				_, err := modeler.RunStudy(sctx, curatorclient.New(client), store, "s", conn, scfg)
				cancel()
				if !errors.Is(err, context.Canceled) && status.Code(err) != codes.Canceled {
					t.Fatalf("RunStudy stopped after iteration %d: err = %v, want cancelled", stop, err)
				}
			}
			obs, err := store.Observations(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) < 10 || len(obs) >= 16 {
				t.Fatalf("%d observations stored after two stops, want from 10 to 15", len(obs))
			}
			res, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			st, err := store.Get(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			ucfg := cfg
			ucfg.InitialIndex = st.InitialIndex
			ref, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "uninterrupted", conn, ucfg)
			if err != nil {
				t.Fatal(err)
			}
			if ref.ReleaseID != res.ReleaseID {
				t.Fatalf("uninterrupted study got release %s, want the same %s", ref.ReleaseID, res.ReleaseID)
			}
			if fmt.Sprint(res.Queried) != fmt.Sprint(ref.Queried) {
				t.Errorf("resumed study queried %v, uninterrupted %v; want the same sequence", res.Queried, ref.Queried)
			}
			if res.Refits != 4 || ref.Refits != 4 {
				t.Errorf("refits: resumed %d, uninterrupted %d; want 4 (t = 4, 8, 12, 16 or the round ends past them)", res.Refits, ref.Refits)
			}
			if res.Lengthscale != ref.Lengthscale || res.SignalVariance != ref.SignalVariance || res.NoiseVariance != ref.NoiseVariance {
				t.Errorf("resumed study ends with (%g, %g, %g), uninterrupted (%g, %g, %g); want the same",
					res.Lengthscale, res.SignalVariance, res.NoiseVariance, ref.Lengthscale, ref.SignalVariance, ref.NoiseVariance)
			}
			fixed, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "fixed", conn, func() modeler.Config { c := ucfg; c.FitEvery = 0; return c }())
			if err != nil {
				t.Fatal(err)
			}
			if fixed.Refits != 0 || res.Lengthscale == fixed.Lengthscale {
				t.Errorf("lengthscale %g after %d refits, %g fixed (%d refits); want the fit to move it", res.Lengthscale, res.Refits, fixed.Lengthscale, fixed.Refits)
			}
		})
	}
}

// TestRunStudyExtend runs studies to T, raises T on a finished study and checks that the
// extended study chooses the same rows as one created with the larger T: β_t depends on
// the iteration t, not on T, and so do the refit points. With q > 1 that holds when the
// shorter study ends on a round boundary of the longer one (16 = 1 + 5·3). Lowering T
// below the recorded count is refused, saying how many are recorded.
func TestRunStudyExtend(t *testing.T) {
	ctx := context.Background()
	addr := startCurator(t)
	for k, tc := range []struct {
		name            string
		q, fitEvery     int
		from, to        int
		queriesToExtend int
	}{
		{"sequential", 1, 0, 20, 30, 10},
		{"sequential, fit every 5", 1, 5, 20, 30, 10},
		{"batches of 3", 3, 0, 16, 25, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := fmt.Sprintf("extend-%d", k)
			client := curatortest.Client(t, addr, id)
			store, err := study.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			conn := study.Connection{Curator: addr, Identity: id}
			cfg := modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: tc.from, Batch: tc.q, FitEvery: tc.fitEvery, InitialIndex: -1}
			short, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, cfg)
			if err != nil {
				t.Fatal(err)
			}
			low := cfg
			low.Iterations = tc.from - 1
			want := fmt.Sprintf("%d iterations are already recorded", tc.from)
			if _, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "s", conn, low); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("RunStudy with T = %d after %d: err = %v, want %q", low.Iterations, tc.from, err, want)
			}
			var resumed []modeler.Resume
			ext := cfg
			ext.Iterations = tc.to
			ext.Resumed = func(r modeler.Resume) { resumed = append(resumed, r) }
			cc := &crashingClient{CuratorServiceClient: client}
			res, err := modeler.RunStudy(ctx, curatorclient.New(cc), store, "s", conn, ext)
			if err != nil {
				t.Fatal(err)
			}
			if len(resumed) != 1 || resumed[0].Iterations != tc.from || resumed[0].PreviousIterations != tc.from {
				t.Errorf("Resumed calls = %+v, want one from %d recorded iterations and T = %d before", resumed, tc.from, tc.from)
			}
			if cc.calls != tc.queriesToExtend || res.Iterations != tc.to || fmt.Sprint(res.Queried[:tc.from]) != fmt.Sprint(short.Queried) {
				t.Errorf("extension: %d queries, %d iterations, first %d rows %v; want %d queries, %d iterations, the rows %v",
					cc.calls, res.Iterations, tc.from, res.Queried[:min(tc.from, len(res.Queried))], tc.queriesToExtend, tc.to, short.Queried)
			}
			st, err := store.Get(ctx, "s")
			if err != nil {
				t.Fatal(err)
			}
			if !st.Done || st.Settings.Iterations != tc.to {
				t.Errorf("extended study: done %v, T = %d; want done, %d", st.Done, st.Settings.Iterations, tc.to)
			}
			one := ext
			one.Resumed, one.InitialIndex = nil, st.InitialIndex
			ref, err := modeler.RunStudy(ctx, curatorclient.New(client), store, "one-go", conn, one)
			if err != nil {
				t.Fatal(err)
			}
			if ref.ReleaseID != res.ReleaseID {
				t.Fatalf("one-go study got release %s, want the same %s", ref.ReleaseID, res.ReleaseID)
			}
			if fmt.Sprint(res.Queried) != fmt.Sprint(ref.Queried) {
				t.Errorf("extended study queried %v, one-go study %v; want the same rows", res.Queried, ref.Queried)
			}
		})
	}
}
