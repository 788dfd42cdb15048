package curatorclient_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// refusalCounter passes calls through and counts the refusals of the rate limit
// (RESOURCE_EXHAUSTED with details), and the Query calls and budget refusals
// (RESOURCE_EXHAUSTED without details) besides them.
type refusalCounter struct {
	curatorv1.CuratorServiceClient
	mu                             sync.Mutex
	throttled, queries, overBudget int
}

func (c *refusalCounter) count(query bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := status.Convert(err)
	retry := false
	for _, d := range st.Details() {
		_, ok := d.(*errdetails.RetryInfo)
		retry = retry || ok
	}
	switch {
	case st.Code() == codes.ResourceExhausted && retry:
		c.throttled++
		return
	case st.Code() == codes.ResourceExhausted:
		c.overBudget++
	}
	if query {
		c.queries++
	}
}

func (c *refusalCounter) Query(ctx context.Context, in *curatorv1.QueryRequest, opts ...grpc.CallOption) (*curatorv1.QueryResponse, error) {
	resp, err := c.CuratorServiceClient.Query(ctx, in, opts...)
	c.count(true, err)
	return resp, err
}

func (c *refusalCounter) GetDatasetInfo(ctx context.Context, in *curatorv1.GetDatasetInfoRequest, opts ...grpc.CallOption) (*curatorv1.GetDatasetInfoResponse, error) {
	resp, err := c.CuratorServiceClient.GetDatasetInfo(ctx, in, opts...)
	c.count(false, err)
	return resp, err
}

// TestRunRidesOutRateLimit runs studies against a curator limiting each identity to 2
// requests per second (burst 2), as `curator serve --rate-limit 2` does: its refusals
// carry a RetryInfo, and the modeler waits and asks again. A refusal by the privacy
// budget carries none and ends the study at once, without another attempt.
func TestRunRidesOutRateLimit(t *testing.T) {
	const answerEps = 0.1
	// The public schema scales the features: a private estimate at this small budget
	// would be forecast poor and refused.
	schema, err := dataset.ParseScaling("schema:" + curatortest.ExampleData("diabetes.schema.csv"))
	if err != nil {
		t.Fatal(err)
	}
	cur := curatortest.Start(t, curatortest.Options{
		Scaling:       schema,
		Budget:        ledger.Cost{Epsilon: 1 + 3*answerEps + answerEps/2, Delta: 0.1},
		DatasetBudget: ledger.Cost{Epsilon: 100, Delta: 0.5},
		Output:        curator.OutputPrivacy{Mechanism: "laplace", Epsilon: answerEps, Lower: 0, Upper: 400},
		Limits:        transport.Limits{Rate: 2},
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := modeler.Config{R: 3, Epsilon: 1, Delta: 1e-5, Iterations: 3, InitialIndex: 0}

	// Two runs of one identity: 2 × 5 requests at 2 per second, the second run's dataset
	// info among those refused at first. The second run is all replays, at no cost.
	cc := &refusalCounter{CuratorServiceClient: cur.Client(t, "patient")}
	for k := range 2 {
		res, err := modeler.Run(ctx, curatorclient.New(cc), cfg)
		if err != nil {
			t.Fatalf("run %d under a rate limit: %v", k+1, err)
		}
		if res.Iterations != 3 {
			t.Errorf("run %d under a rate limit: %d iterations, want 3", k+1, res.Iterations)
		}
	}
	if cc.throttled == 0 {
		t.Errorf("no request was refused by the rate limit; the test does not test the retry")
	}

	// A projection of ε = 1.3 fits the budget of 1.35, the answers' one charge of 0.1
	// then does not: the study is refused by its quote, before anything is charged.
	poor := &refusalCounter{CuratorServiceClient: cur.Client(t, "poor")}
	bcfg := cfg
	bcfg.Epsilon = 1.3
	_, err = modeler.Run(ctx, curatorclient.New(poor), bcfg)
	if !errors.Is(err, modeler.ErrStudyUnaffordable) || ctx.Err() != nil {
		t.Fatalf("run past the budget: err = %v, want the study refused before the deadline", err)
	}
	if b, err := curatorclient.New(poor).DatasetInfo(ctx); err != nil || b.Budget.EpsilonSpent != 0 || poor.queries != 0 {
		t.Errorf("refused study: spent %+v, %v, %d queries; want nothing charged and no query", b, err, poor.queries)
	}
	// The projection released alone (a request without the answers), its first Query
	// is refused by the budget, at once and not retried.
	if _, err := curatorclient.FetchProjection(ctx, poor, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1.3, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	_, _, err = curatorclient.New(poor).Query(ctx, []int{1})
	if status.Code(err) != codes.ResourceExhausted || ctx.Err() != nil {
		t.Fatalf("query past the budget: err = %v, want RESOURCE_EXHAUSTED before the deadline", err)
	}
	if poor.queries != 1 || poor.overBudget != 1 {
		t.Errorf("query past the budget: %d queries, %d refused by the budget; want 1 query, refused", poor.queries, poor.overBudget)
	}
}
