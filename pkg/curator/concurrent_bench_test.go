package curator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/ledger/pgledger"
	"github.com/privbo/privbo/pkg/projection"
)

// postgresLedger opens a PostgreSQL ledger in a fresh schema of the test server
// (PRIVBO_TEST_POSTGRES_DSN or the local default), dropped when t ends. It fails t if
// the server cannot be reached, unless PRIVBO_SKIP_POSTGRES=1.
func postgresLedger(t testing.TB, limits ledger.Limits) *ledger.Ledger {
	t.Helper()
	dsn := os.Getenv("PRIVBO_TEST_POSTGRES_DSN")
	if dsn == "" {
		dsn = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		if os.Getenv("PRIVBO_SKIP_POSTGRES") == "1" {
			t.Skipf("PostgreSQL unreachable and PRIVBO_SKIP_POSTGRES=1: %v", err)
		}
		t.Fatalf("PostgreSQL unreachable (set PRIVBO_TEST_POSTGRES_DSN, or PRIVBO_SKIP_POSTGRES=1 to skip): %v", err)
	}
	var b [8]byte
	rand.Read(b[:])
	schema := "privbo_cur_" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		if _, err := conn.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		conn.Close(context.Background())
	})
	led, err := pgledger.Open(ctx, dsn, pgledger.Options{Schema: schema}, limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { led.Close() })
	return led
}

// BenchmarkConcurrentReleases times 100 concurrent distinct projection releases
// (r = 10 of 20,000 rows, 4 features, lifted mechanism, memory unbounded) from one
// identity whose budget pays for 2, on a fresh ledger each time, and reports how many
// were computed and charged per round (docs/EXPERIMENTS.md, "Reserve, then compute").
func BenchmarkConcurrentReleases(b *testing.B) {
	const n, d, r, k = 20000, 4, 10, 100
	var csv strings.Builder
	for j := range d {
		fmt.Fprintf(&csv, "x%d,", j)
	}
	csv.WriteString("y\n")
	for i := range n {
		for j := range d {
			fmt.Fprintf(&csv, "%d,", (i*(7+2*j)+j*j)%101)
		}
		fmt.Fprintf(&csv, "%d\n", i%13)
	}
	ds, err := dataset.ParseCSV(strings.NewReader(csv.String()), "bench", dataset.Options{Target: "y", Scaling: dataset.Scaling{Mode: dataset.ScaleNone}})
	if err != nil {
		b.Fatal(err)
	}
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 1, Delta: 0.5}}
	for _, engine := range []string{"sqlite", "postgres"} {
		b.Run(engine, func(b *testing.B) {
			var computed, charged int64
			rounds := 0
			for b.Loop() {
				b.StopTimer()
				dir := b.TempDir()
				var led *ledger.Ledger
				if engine == "postgres" {
					led = postgresLedger(b, limits)
				} else if led, err = ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits); err != nil {
					b.Fatal(err)
				}
				c, err := New(Config{Dataset: ds, Ledger: led, StateDir: dir, ProjectionMechanism: projection.MechanismLifted})
				if err != nil {
					b.Fatal(err)
				}
				var count atomic.Int64
				c.computeHook = func() { count.Add(1) }
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range k {
					wg.Go(func() {
						<-start
						_, err := c.ReleaseProjection(context.Background(), "vendor", ProjectionRequest{R: r, Epsilon: 0.5, Delta: 1e-5, Label: fmt.Sprint(i)})
						if err != nil && !errors.Is(err, ledger.ErrBudgetExceeded) {
							b.Error(err)
						}
					})
				}
				b.StartTimer()
				close(start)
				wg.Wait()
				b.StopTimer()
				bal, err := led.Balance(context.Background(), ledger.Account{Dataset: "bench", Identity: "vendor"}, ledger.RelationFeatureUnit)
				if err != nil {
					b.Fatal(err)
				}
				computed += count.Load()
				charged += int64(bal.Charges)
				rounds++
				led.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(computed)/float64(rounds), "computed/op")
			b.ReportMetric(float64(charged)/float64(rounds), "charged/op")
		})
	}
}
