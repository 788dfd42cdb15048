// Package curatortest starts a curator in-process for tests, exactly as cmd/curator does
// (server.Start on a loopback port), and dials it as an identity, in the manner of etcd's
// integration.NewCluster: one helper for every package that tests against a live curator.
//
//	cur := curatortest.Start(t, curatortest.Options{Output: curator.OutputPrivacy{Mechanism: "none"}})
//	client := cur.Client(t, "vendor")
//
// The curator logs JSON at debug level into Curator.Logs, and is shut down when the test
// ends (t.Cleanup).
package curatortest

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"

	"github.com/privbo/privbo/internal/testlog"
	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// ExampleData returns the path of the shipped example file name (examples/data/name, see
// examples/data/README.md), wherever the test runs from.
func ExampleData(name string) string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("curatortest: cannot locate the source file")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "data", name)
}

// Diabetes is the shipped diabetes data (442 rows, target "progression"), the data a
// curator of Options serves unless told otherwise.
var Diabetes = ExampleData("diabetes.csv")

// DiabetesSchema returns the schema scaling of the shipped diabetes data
// (examples/data/diabetes.schema.csv): public bounds, no private estimate, so a test whose
// budget is too small for the default private estimate still starts.
func DiabetesSchema(t testing.TB) dataset.Scaling {
	t.Helper()
	s, err := dataset.LoadSchema(ExampleData("diabetes.schema.csv"))
	if err != nil {
		t.Fatalf("curatortest: %v", err)
	}
	return dataset.Scaling{Mode: dataset.ScaleSchema, Schema: s}
}

// Default budget of an identity when Options.Budget is zero.
var DefaultBudget = ledger.Cost{Epsilon: 100, Delta: 0.1}

// Options says how the test's curator differs from the default one: the shipped diabetes
// data (target "progression", dataset id "diabetes", the default scaling), an
// identity budget of DefaultBudget, a fresh state directory, and the curator's default
// output privacy. Zero fields take these defaults.
type Options struct {
	// DataPath is the CSV served; "" for Diabetes.
	DataPath string
	// Target is the target column; "" for "progression".
	Target string
	// Scaling of the features and target ("" kind: the dataset package's default).
	Scaling dataset.Scaling
	// DatasetID is the id budgets are kept under; "" for "diabetes".
	DatasetID string
	// DatasetName is the name the curator reports; "" for the data file's name.
	DatasetName string
	// Budget is each identity's budget; zero for DefaultBudget. DatasetBudget caps all
	// identities together (zero: the server's default, Budget).
	Budget, DatasetBudget ledger.Cost
	// Output is the answers' privacy; the zero value is the curator's default mechanism.
	Output curator.OutputPrivacy
	// Jobs enables and configures the tuning jobs.
	Jobs config.JobsConfig
	// Limits are the transport's limits (per-identity rate limit, …).
	Limits transport.Limits
	// StateDir holds the ledger; "" for a new t.TempDir(). Give the same one to two
	// curators in turn to test a restart.
	StateDir string
	// Ledger selects the ledger store; the zero value is SQLite in StateDir. Give
	// PostgresLedger(t) to several curators to run replicas sharing one budget.
	Ledger config.LedgerConfig
	// Configure, if set, edits the configuration built from the fields above last, for
	// the settings they do not name (TLS, projection mechanism, evaluation, …).
	Configure func(*config.Config)
}

// Config returns the server configuration o describes, as Start would use it but
// without a logger (Start adds one writing into Curator.Logs).
func (o Options) Config(t testing.TB) config.Config {
	t.Helper()
	cfg := config.Config{
		Listen:        "127.0.0.1:0",
		DataPath:      o.DataPath,
		Data:          dataset.Options{Target: o.Target, Scaling: o.Scaling},
		DatasetID:     o.DatasetID,
		DatasetName:   o.DatasetName,
		StateDir:      o.StateDir,
		Budget:        o.Budget,
		DatasetBudget: o.DatasetBudget,
		Output:        o.Output,
		Jobs:          o.Jobs,
		Limits:        o.Limits,
		Ledger:        o.Ledger,
	}
	cfg.DataPath = cmp.Or(cfg.DataPath, Diabetes)
	cfg.Data.Target = cmp.Or(cfg.Data.Target, "progression")
	cfg.DatasetID = cmp.Or(cfg.DatasetID, "diabetes")
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	if cfg.Budget == (ledger.Cost{}) {
		cfg.Budget = DefaultBudget
	}
	if o.Configure != nil {
		o.Configure(&cfg)
	}
	return cfg
}

// Curator is a curator running in-process.
type Curator struct {
	// Server is the running server; Server.Curator() and Server.Dataset() reach inside.
	Server *server.Server
	// Addr is the address it listens on (loopback).
	Addr string
	// Config is the configuration it was started with.
	Config config.Config
	// Logs holds everything it logged, as JSON lines at debug level.
	Logs *testlog.Buffer

	stopped bool
}

// Start starts a curator configured by o and stops it when t ends; it fails t if the
// curator does not start.
func Start(t testing.TB, o Options) *Curator {
	t.Helper()
	return StartConfig(t, o.Config(t))
}

// StartConfig starts a curator with cfg as given, but for an empty Listen
// ("127.0.0.1:0"), StateDir (a new t.TempDir()) and a nil Logger (debug JSON into
// Curator.Logs; a logger given is kept and Logs stays empty), and stops it when t ends.
func StartConfig(t testing.TB, cfg config.Config) *Curator {
	t.Helper()
	cfg.Listen = cmp.Or(cfg.Listen, "127.0.0.1:0")
	if cfg.StateDir == "" {
		cfg.StateDir = t.TempDir()
	}
	logs := &testlog.Buffer{}
	if cfg.Logger == nil {
		cfg.Logger, logs = testlog.New()
	}
	srv, err := server.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("curatortest: server.Start: %v", err)
	}
	c := &Curator{Server: srv, Addr: srv.Addr(), Config: cfg, Logs: logs}
	t.Cleanup(func() { c.Stop(t) })
	return c
}

// Stop shuts the curator down (within 10 s), failing t on an error; a second call does
// nothing. Tests that restart a curator on the same state stop the first one with it.
func (c *Curator) Stop(t testing.TB) {
	t.Helper()
	if c.stopped {
		return
	}
	c.stopped = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Server.Shutdown(ctx); err != nil {
		t.Errorf("curatortest: Shutdown: %v", err)
	}
}

// Client dials the curator as identity (plaintext loopback, the identity claimed by
// header) and returns the generated client; the connection closes when t ends.
func (c *Curator) Client(t testing.TB, identity string) curatorv1.CuratorServiceClient {
	t.Helper()
	return Client(t, c.Addr, identity)
}

// Conn dials the curator as identity; the connection closes when t ends.
func (c *Curator) Conn(t testing.TB, identity string) *grpc.ClientConn {
	t.Helper()
	return Conn(t, c.Addr, identity)
}

// Client dials the curator at addr (in-process or a real one) as identity and returns
// the generated client; the connection closes when t ends.
func Client(t testing.TB, addr, identity string) curatorv1.CuratorServiceClient {
	t.Helper()
	return curatorv1.NewCuratorServiceClient(Conn(t, addr, identity))
}

// Conn dials the curator at addr as identity; the connection closes when t ends.
func Conn(t testing.TB, addr, identity string) *grpc.ClientConn {
	t.Helper()
	conn, err := transport.Dial(addr, transport.ClientConfig{Identity: identity})
	if err != nil {
		t.Fatalf("curatortest: dial %s as %q: %v", addr, identity, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// PostgresDSN is the test PostgreSQL server: PRIVBO_TEST_POSTGRES_DSN, or the local
// default postgres://postgres@127.0.0.1:5432/test.
func PostgresDSN() string {
	return cmp.Or(os.Getenv("PRIVBO_TEST_POSTGRES_DSN"), "postgres://postgres@127.0.0.1:5432/test?sslmode=disable")
}

// PostgresLedger returns the configuration of a PostgreSQL ledger in a new schema of
// the test server, which is dropped when t ends, after the curators started on it
// (t.Cleanup runs in reverse order). It fails t if the server cannot be reached, unless
// PRIVBO_SKIP_POSTGRES=1, which skips t.
func PostgresLedger(t testing.TB) config.LedgerConfig {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dsn := PostgresDSN()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("PRIVBO_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and PRIVBO_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("curatortest: PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN, or PRIVBO_SKIP_POSTGRES=1 to skip): %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "privbo_ct_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("curatortest: drop schema %s: %v", schema, err)
		}
		conn.Close(ctx)
	})
	return config.LedgerConfig{Kind: "postgres", DSN: dsn, Schema: schema}
}
