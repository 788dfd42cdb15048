package integration

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/privbo/privbo/pkg/devca"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestLoadOverTLS drives a real curator process over mutual TLS from many clients, each
// its own identity, with private outputs so that every distinct row charges the ledger.
// It must finish with no errors, every identity's spend exactly (distinct rows) × ε, and
// the curator's peak memory bounded. PRIVBO_LOAD_CLIENTS and PRIVBO_LOAD_QUERIES scale
// it (the closing note of the operations issue used 50 × 2,000).
func TestLoadOverTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	clients, queries := envInt("PRIVBO_LOAD_CLIENTS", 20), envInt("PRIVBO_LOAD_QUERIES", 300)
	bin := buildBinary(t, "./cmd/curator")
	pki := t.TempDir()
	ids := make([]string, clients)
	for k := range ids {
		ids[k] = fmt.Sprintf("vendor-%02d", k)
	}
	if err := devca.Create(pki, []string{"127.0.0.1"}, ids, time.Hour); err != nil {
		t.Fatal(err)
	}
	const epsPerRow = 0.001
	cur := startRealCurator(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes", "--state", t.TempDir(),
		"--tls-cert", filepath.Join(pki, devca.ServerFile), "--tls-key", filepath.Join(pki, devca.ServerKeyFile),
		"--client-ca", filepath.Join(pki, devca.CAFile),
		"--budget-epsilon", "100", "--budget-delta", "0.1", "--dataset-budget-epsilon", "10000",
		"--output-privacy", "laplace", "--output-epsilon", fmt.Sprint(epsPerRow), "--schema", diabetesSchema)
	defer cur.kill()

	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      []error
		distinct  = make([]map[uint64]float64, clients)
	)
	start := time.Now()
	var wg sync.WaitGroup
	for k := 0; k < clients; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var client curatorv1.CuratorServiceClient
			c, key := devca.ClientFiles(ids[k])
			tlsCfg, err := transport.ClientTLS(filepath.Join(pki, devca.CAFile), filepath.Join(pki, c), filepath.Join(pki, key), "")
			if err == nil {
				var conn *grpc.ClientConn
				if conn, err = transport.Dial(cur.addr, transport.ClientConfig{TLS: tlsCfg}); err == nil {
					defer conn.Close()
					client = curatorv1.NewCuratorServiceClient(conn)
				}
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			seen := map[uint64]float64{}
			lat := make([]time.Duration, 0, queries)
			r := rand.New(rand.NewPCG(uint64(k), 7))
			for q := 0; q < queries; q++ {
				i := uint64(r.IntN(442))
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				t0 := time.Now()
				resp, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{i}})
				lat = append(lat, time.Since(t0))
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				v := resp.GetObservations()[0].GetValue()
				if old, ok := seen[i]; ok && math.Float64bits(old) != math.Float64bits(v) {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: row %d answered %g then %g", ids[k], i, old, v))
					mu.Unlock()
				}
				seen[i] = v
			}
			mu.Lock()
			latencies = append(latencies, lat...)
			distinct[k] = seen
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if len(errs) > 0 {
		t.Fatalf("%d errors under load; first: %v", len(errs), errs[0])
	}

	// The ledger is exact: each identity that received answers paid ε once for all of
	// them (parallel composition over the rows).
	for k, id := range ids {
		c, key := devca.ClientFiles(id)
		tlsCfg, _ := transport.ClientTLS(filepath.Join(pki, devca.CAFile), filepath.Join(pki, c), filepath.Join(pki, key), "")
		client := tlsClient(t, cur.addr, transport.ClientConfig{TLS: tlsCfg})
		b, err := client.GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
		if err != nil {
			t.Fatal(err)
		}
		want := 0.0
		if len(distinct[k]) > 0 {
			want = epsPerRow
		}
		if got := b.GetBudget().GetEpsilonSpent(); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s spent ε = %.6f for %d rows, want one ε_out = %.6f", id, got, len(distinct[k]), want)
		}
	}
	peak := peakRSS(t, cur.cmd.Process.Pid)
	sort.Slice(latencies, func(a, b int) bool { return latencies[a] < latencies[b] })
	pct := func(p float64) time.Duration { return latencies[int(p*float64(len(latencies)-1))] }
	total := clients * queries
	t.Logf("%d clients × %d queries over mutual TLS in %s: %.0f queries/s, latency p50 %s p99 %s max %s; curator peak RSS %d MiB",
		clients, queries, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), pct(0.5), pct(0.99), latencies[len(latencies)-1], peak>>20)
	if peak > 512<<20 {
		t.Errorf("curator peak RSS %d MiB, want ≤ 512 MiB", peak>>20)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// peakRSS reads a process's peak resident set size (VmHWM) from /proc.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("reading peak memory: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}
