package curatorclient_test

import (
	"context"
	"fmt"
	"os"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// A modeler's first calls to a curator: what the dataset is, and what a study would
// cost, quoted before anything is charged. The curator here runs in-process on the
// shipped diabetes data with its public schema, on loopback without TLS.
func Example() {
	state, err := os.MkdirTemp("", "curatorclient-example-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(state)
	sc, err := dataset.ParseScaling("schema:../../examples/data/diabetes.schema.csv")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	srv, err := server.Start(ctx, config.Config{
		Listen: "127.0.0.1:0", DataPath: "../../examples/data/diabetes.csv", DatasetID: "diabetes", StateDir: state,
		Data:   dataset.Options{Target: "progression", Scaling: sc},
		Budget: ledger.Cost{Epsilon: 10, Delta: 1e-6}, Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 1},
	})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown(ctx)

	conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: "vendor"})
	if err != nil {
		panic(err)
	}
	defer conn.Close()
	c := curatorclient.New(curatorv1.NewCuratorServiceClient(conn))
	info, err := c.DatasetInfo(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Printf("dataset %s: %d rows, %d features\n", info.Name, info.Rows, info.Dimension)
	q, err := c.Quote(ctx, modeler.QuoteRequest{WithAnswers: true})
	if err != nil {
		panic(err)
	}
	fmt.Printf("a default study: r=%d, ε=%g for the projection and %g for the answers (noise sd %.4g on [%g, %g]); fits: %v\n",
		q.R, q.Epsilon, q.Answers.Epsilon, q.Answers.NoiseSD, q.Answers.Lower, q.Answers.Upper, q.Fits)
	// Output:
	// dataset diabetes: 442 rows, 10 features
	// a default study: r=10, ε=1 for the projection and 1 for the answers (noise sd 565.7 on [0, 400]); fits: true
}
