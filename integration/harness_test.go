package integration

import (
	"context"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/internal/testlog"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// diabetesPath is the shipped example data (see examples/data/README.md).
var (
	diabetesPath   = filepath.Join("..", "examples", "data", "diabetes.csv")
	diabetesSchema = filepath.Join("..", "examples", "data", "diabetes.schema.csv")
)

// diabetesScaling is the shipped public schema's scaling of the diabetes data: public
// per-column bounds (no statistic of the data) and the target's range [0, 400].
func diabetesScaling(t *testing.T) dataset.Scaling {
	t.Helper()
	sc, err := dataset.ParseScaling("schema:" + diabetesSchema)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// curatorProc is a curator started in-process by curatortest, under the names this
// package's tests use.
type curatorProc struct {
	*curatortest.Curator
	srv  *server.Server
	logs *testlog.Buffer
}

// diabetesConfig is a curator over the shipped diabetes data, scaled with its public
// schema, with a generous budget and exact answers (the paper's setting, chosen
// explicitly: a curator's default is private answers), which go to identities holding a
// projection, at most 200 rows each.
func diabetesConfig(t *testing.T, state string) config.Config {
	t.Helper()
	return curatortest.Options{
		DataPath: diabetesPath,
		Scaling:  diabetesScaling(t),
		StateDir: state,
		Budget:   ledger.Cost{Epsilon: 1000, Delta: 0.5},
		Output:   curator.OutputPrivacy{Mechanism: "none"},
	}.Config(t)
}

// startCurator starts a curator in-process exactly as cmd/curator does, logging at debug
// level into a buffer the test can scan, and stops it when the test ends.
func startCurator(t *testing.T, cfg config.Config) *curatorProc {
	t.Helper()
	c := curatortest.StartConfig(t, cfg)
	return &curatorProc{Curator: c, srv: c.Server, logs: c.Logs}
}

// startCuratorErr starts a curator that is expected to fail to start.
func startCuratorErr(cfg config.Config) (*server.Server, error) {
	srv, err := server.Start(context.Background(), cfg)
	if err == nil {
		srv.Shutdown(context.Background())
	}
	return srv, err
}

// stop shuts the curator down before the test ends (to restart it on the same state).
func (p *curatorProc) stop(t *testing.T) {
	t.Helper()
	p.Stop(t)
}

// client dials the curator as identity through the generated client.
func (p *curatorProc) client(t *testing.T, identity string) curatorv1.CuratorServiceClient {
	t.Helper()
	return p.Client(t, identity)
}

// dial connects to the curator at addr (in-process or a real one) as identity.
func dial(t *testing.T, addr, identity string) *grpc.ClientConn {
	t.Helper()
	return curatortest.Conn(t, addr, identity)
}
