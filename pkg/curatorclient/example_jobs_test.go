package curatorclient_test

import (
	"context"
	"fmt"
	"os"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/hparam"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// A private hyperparameter search run by the curator on its own data: a Kusner job's
// price, quoted free, then the job itself, followed to its end. The curator runs
// in-process on the shipped breast-cancer data, on loopback without TLS.
func ExampleClient_SubmitJob() {
	state, err := os.MkdirTemp("", "curatorclient-jobs-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(state)
	sc, err := dataset.ParseScaling("schema:../../examples/data/breast_cancer.schema.csv")
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	srv, err := server.Start(ctx, config.Config{
		Listen: "127.0.0.1:0", DataPath: "../../examples/data/breast_cancer.csv", DatasetID: "breast-cancer", StateDir: state,
		Data:   dataset.Options{Target: "benign", Scaling: sc},
		Budget: ledger.Cost{Epsilon: 10, Delta: 1e-2}, Output: curator.OutputPrivacy{Lower: 0, Upper: 1},
		Jobs: config.JobsConfig{Enabled: true},
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

	lambda, _ := hparam.ParseAxis("lambda=log:1e-4:10:8")
	spec := jobs.Spec{Kusner: &jobs.KusnerSpec{Algorithm: 1, Space: []hparam.Axis{lambda}, Iterations: 5, Epsilon: 1, Delta: 1e-3, Force: true}}
	q, err := c.QuoteJob(ctx, spec)
	if err != nil {
		panic(err)
	}
	fmt.Printf("quote: ε=%g δ=%g under %s; informative: %v\n", q.Cost.Epsilon, q.Cost.Delta, q.Relation, q.Forecast.Informative)
	j, err := c.SubmitJob(ctx, "example", spec)
	if err != nil {
		panic(err)
	}
	j, err = c.WaitJob(ctx, j.ID, nil)
	if err != nil {
		panic(err)
	}
	_, released := j.Result.Hyperparameters["lambda"]
	fmt.Printf("job %s: charged ε=%g; a λ released: %v\n", j.State, j.Cost.Epsilon, released)
	// Output:
	// quote: ε=2 δ=0.002 under validation-record; informative: false
	// job succeeded: charged ε=2; a λ released: true
}
