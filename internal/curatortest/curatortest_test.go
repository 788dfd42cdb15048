package curatortest

import (
	"context"
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/ledger"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestOptionsConfig: zero options are the diabetes curator with DefaultBudget in a fresh
// state directory; fields given are kept, and Configure has the last word.
func TestOptionsConfig(t *testing.T) {
	cfg := Options{}.Config(t)
	if cfg.DataPath != Diabetes || cfg.Data.Target != "progression" || cfg.DatasetID != "diabetes" ||
		cfg.Budget != DefaultBudget || cfg.StateDir == "" || cfg.Listen != "127.0.0.1:0" || cfg.Logger != nil {
		t.Errorf("default config = %+v", cfg)
	}
	cfg = Options{
		DataPath: ExampleData("breast_cancer.csv"), Target: "benign", DatasetID: "bc", StateDir: "/state",
		Budget:    ledger.Cost{Epsilon: 2, Delta: 1e-3},
		Configure: func(c *config.Config) { c.ProjectionMechanism = "lifted"; c.DatasetID = "bc2" },
	}.Config(t)
	if !strings.HasSuffix(cfg.DataPath, "examples/data/breast_cancer.csv") || cfg.Data.Target != "benign" || cfg.DatasetID != "bc2" ||
		cfg.StateDir != "/state" || cfg.Budget.Epsilon != 2 || cfg.ProjectionMechanism != "lifted" {
		t.Errorf("config = %+v", cfg)
	}
}

// TestStart starts a curator, asks it for its dataset as an identity, finds its start in
// the logs, and restarts it on the same state: the identity's spending is still there.
func TestStart(t *testing.T) {
	ctx := context.Background()
	state := t.TempDir()
	o := Options{StateDir: state, DatasetName: "diab", Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 0.5, Lower: 0, Upper: 400}}
	cur := Start(t, o)
	if cur.Addr != cur.Server.Addr() || cur.Config.StateDir != state {
		t.Errorf("Addr %q, Config.StateDir %q; want %q, %q", cur.Addr, cur.Config.StateDir, cur.Server.Addr(), state)
	}
	info, err := cur.Client(t, "ct").GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetName() != "diab" || info.GetDatasetId() != "diabetes" || info.GetRows() != 442 ||
		info.GetBudget().GetIdentity() != "ct" || info.GetBudget().GetEpsilonLimit() != DefaultBudget.Epsilon {
		t.Errorf("dataset info = %v", info)
	}
	if _, err := cur.Client(t, "ct").Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	if logs := cur.Logs.String(); !strings.Contains(logs, `"msg":"curator serving","addr":"`+cur.Addr+`"`) ||
		!strings.Contains(logs, `"msg":"query answers charged","identity":"ct"`) {
		t.Errorf("the curator's log lacks its start or the charge:\n%s", logs)
	}
	cur.Stop(t)
	cur.Stop(t) // a second stop does nothing; nor does the cleanup's

	again := Start(t, o)
	b, err := curatorv1.NewCuratorServiceClient(again.Conn(t, "ct")).GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.GetBudget().GetEpsilonSpent(); got != 0.5 {
		t.Errorf("after a restart on the same state: ε spent %g, want the answers' 0.5", got)
	}
}

// TestStartConfigKeepsLogger: a logger given to StartConfig is kept.
func TestStartConfigKeepsLogger(t *testing.T) {
	cfg := Options{}.Config(t)
	cfg.Listen = ""
	cur := StartConfig(t, cfg)
	if cur.Config.Listen != "127.0.0.1:0" || cur.Config.Logger == nil {
		t.Errorf("StartConfig did not fill Listen or Logger: %+v", cur.Config)
	}
}
