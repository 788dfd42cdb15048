package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/transport"
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

// syncBuffer collects everything the curator logs, for scanning.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Sync() error { return nil }

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.buf.Bytes()...)
}

type curatorProc struct {
	srv  *server.Server
	logs *syncBuffer
	cfg  server.Config
}

// diabetesConfig is a curator over the shipped diabetes data, scaled with its public
// schema, with a generous budget and exact answers (the paper's setting, chosen
// explicitly: a curator's default is private answers), which go to identities holding a
// projection, at most 200 rows each.
func diabetesConfig(t *testing.T, state string) server.Config {
	t.Helper()
	return server.Config{
		Listen:    "127.0.0.1:0",
		DataPath:  diabetesPath,
		Data:      dataset.Options{Target: "progression", Scaling: diabetesScaling(t)},
		DatasetID: "diabetes",
		StateDir:  state,
		Budget:    ledger.Cost{Epsilon: 1000, Delta: 0.5},
		Output:    curator.OutputPrivacy{Mechanism: "none"},
	}
}

// startCurator starts a curator in-process exactly as cmd/curator does, logging at debug
// level into a buffer the test can scan.
func startCurator(t *testing.T, cfg server.Config) *curatorProc {
	t.Helper()
	logs := &syncBuffer{}
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	cfg.Logger = zap.New(zapcore.NewCore(enc, logs, zapcore.DebugLevel))
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("server.Start: %v", err)
	}
	p := &curatorProc{srv: srv, logs: logs, cfg: cfg}
	t.Cleanup(func() { p.stop(t) })
	return p
}

// startCuratorErr starts a curator that is expected to fail to start.
func startCuratorErr(cfg server.Config) (*server.Server, error) {
	srv, err := server.Start(context.Background(), cfg)
	if err == nil {
		srv.Shutdown(context.Background())
	}
	return srv, err
}

func (p *curatorProc) stop(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// client dials the curator as identity through the generated client.
func (p *curatorProc) client(t *testing.T, identity string) curatorv1.CuratorServiceClient {
	t.Helper()
	conn := dial(t, p.srv.Addr(), identity)
	return curatorv1.NewCuratorServiceClient(conn)
}

func dial(t *testing.T, addr, identity string) *grpc.ClientConn {
	t.Helper()
	conn, err := transport.Dial(addr, transport.ClientConfig{Identity: identity})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}
