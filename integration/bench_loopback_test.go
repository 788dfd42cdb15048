package integration

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/server"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// benchCurator starts a curator on loopback over the CSV at path and returns a client
// for identity. Everything is torn down when the benchmark ends.
func benchCurator(b *testing.B, path, target, identity, mechanism string) curatorv1.CuratorServiceClient {
	b.Helper()
	srv, err := server.Start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", DataPath: path, Data: dataset.Options{Target: target},
		StateDir: b.TempDir(), Budget: ledger.Cost{Epsilon: 1e9, Delta: 0.99}, ProjectionMechanism: mechanism,
		DatasetID: "bench", Output: curator.OutputPrivacy{Lower: -1e6, Upper: 1e6},
		// The benchmark's r = 20 exceeds its d = 10, which the Gaussian mechanism refuses
		// to clients (it adds noise and no information); measured here all the same, as
		// the workload of the earlier figures (2·10⁷ exact draws).
		SimulationHooks: func(c *curator.Config) { c.AllowWideProjection = true },
	})
	if err != nil {
		b.Fatalf("server.Start: %v", err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	conn, err := transport.Dial(srv.Addr(), transport.ClientConfig{Identity: identity})
	if err != nil {
		b.Fatalf("Dial: %v", err)
	}
	b.Cleanup(func() { conn.Close() })
	return curatorv1.NewCuratorServiceClient(conn)
}

// tallCSV writes an n×d Gaussian data set with a target column (fixed seed).
func tallCSV(b *testing.B, n, d int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "tall.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for j := range d {
		fmt.Fprintf(w, "x%d,", j)
	}
	w.WriteString("y\n")
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for range n {
		for j := range d + 1 {
			buf = strconv.AppendFloat(buf[:0], rng.NormFloat64(), 'g', 8, 64)
			if j < d {
				buf = append(buf, ',')
			}
			w.Write(buf)
		}
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkProjectionStream times a modeler receiving an n = 1,000,000, r = 20
// projection over loopback gRPC end to end (curatorclient.FetchProjection: request, stream
// of chunks, SHA-256 check, decode into Z). "fresh" asks for a new release each time
// (projection of d = 10 features by the Gram route, durable write, ledger charge,
// stream); "replay" streams the stored release again (no cost, no computation).
// Target: ≤ 3 s end to end. "gaussian-fresh" is fresh with the Gaussian mechanism and
// "sampler" draws its 2·10⁷ noise values alone (the mechanism of the same ε, δ,
// sensitivity and size adding them to zeros on two goroutines): issue 32's target is
// gaussian-fresh ≤ fresh + sampler + 0.3 s. cpu-s/op is the process's CPU time (client
// and curator) per op, steadier than wall time on a loaded machine. Skipped with -short
// (writing the CSV takes a few seconds).
func BenchmarkProjectionStream(b *testing.B) {
	if testing.Short() {
		b.Skip("1,000,000-row data set skipped with -short")
	}
	const n, d, r = 1_000_000, 10, 20
	data := tallCSV(b, n, d)
	lifted := benchCurator(b, data, "y", "bench-stream", projection.MechanismLifted)
	ctx := context.Background()
	// fetchFrom fetches the release of label and fails unless the curator replayed it
	// exactly when *replayed (nil: either way).
	fetchFrom := func(b *testing.B, client curatorv1.CuratorServiceClient, label string, replayed *bool) {
		p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: r, Epsilon: 2, Delta: 1e-7, Label: label})
		if err != nil {
			b.Fatal(err)
		}
		if p.Rows != n || p.Cols != r || len(p.Z) != n*r {
			b.Fatalf("received %d×%d, want %d×%d", p.Rows, p.Cols, n, r)
		}
		if replayed != nil && p.Replayed != *replayed {
			b.Fatalf("release %q: replayed = %v, want %v", label, p.Replayed, *replayed)
		}
	}
	fresh, replay := new(bool), new(bool)
	*replay = true
	fetch := func(b *testing.B, label string, replayed *bool) { fetchFrom(b, lifted, label, replayed) }
	// Labels count across -count's repeats, which reuse the curator: a repeated label
	// would be a replay.
	k := 0
	b.Run("fresh", func(b *testing.B) {
		defer reportCPU(b)()
		for b.Loop() {
			k++
			fetch(b, fmt.Sprintf("fresh-%d", k), fresh)
		}
		b.ReportMetric(float64(n*r*8)/1e6, "MB")
	})
	// The curator's default mechanism: the same projection plus 2·10⁷ exact Gaussian
	// draws from crypto/rand, which dominate.
	b.Run("gaussian-fresh", func(b *testing.B) {
		gauss := benchCurator(b, data, "y", "bench-stream", projection.MechanismGaussian)
		defer reportCPU(b)()
		k := 0
		for b.Loop() {
			k++
			fetchFrom(b, gauss, fmt.Sprintf("fresh-%d", k), fresh)
		}
		b.ReportMetric(float64(n*r*8)/1e6, "MB")
	})
	b.Run("replay", func(b *testing.B) {
		fetch(b, "replay", nil)
		b.ResetTimer()
		defer reportCPU(b)()
		for b.Loop() {
			fetch(b, "replay", replay)
		}
		b.ReportMetric(float64(n*r*8)/1e6, "MB")
	})
	b.Run("sampler", func(b *testing.B) {
		// r > d: r^(−1/2)·M is an isometry, of norm 1.
		mech, err := dp.NewVectorGaussian(2, 1e-7, projection.GaussianSensitivity(n, 1), n*r)
		if err != nil {
			b.Fatal(err)
		}
		defer reportCPU(b)()
		for b.Loop() {
			var wg sync.WaitGroup
			for range 2 {
				wg.Go(func() {
					src, buf := dp.CryptoSource(), make([]float64, 250)
					for i := 0; i < n*r/2; i += len(buf) {
						clear(buf)
						if err := mech.AddNoise(src, buf); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
		}
	})
}

// reportCPU starts counting the process's CPU time (user and system); the function it
// returns reports it per iteration as cpu-s/op.
func reportCPU(b *testing.B) func() {
	start := cpuSeconds(b)
	return func() { b.ReportMetric((cpuSeconds(b)-start)/float64(b.N), "cpu-s/op") }
}

func cpuSeconds(b *testing.B) float64 {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
}

// BenchmarkCachedQueries times index queries whose answers the caller already holds
// (the modeler's replays; no evaluation, no charge) over loopback gRPC against the
// shipped diabetes curator: "sequential" is one caller waiting for each answer
// (latency), "parallel-N" is N concurrent callers on one connection (throughput).
// Reported: queries/s, p50 and p99 latency. Target: ≥ 10,000 queries/s, p99 ≤ 2 ms.
//
// With PRIVBO_BENCH_CURATOR=HOST:PORT the benchmark queries a curator already running in
// another process (plaintext, serving the shipped diabetes data with its target
// "progression", e.g. `curator serve --data examples/data/diabetes.csv --target
// progression --state DIR --budget-epsilon 1e9 --budget-delta 0.5 --listen
// 127.0.0.1:7070`), so that client and server are separate processes as in a deployment.
func BenchmarkCachedQueries(b *testing.B) {
	var client curatorv1.CuratorServiceClient
	if addr := os.Getenv("PRIVBO_BENCH_CURATOR"); addr != "" {
		conn, err := transport.Dial(addr, transport.ClientConfig{Identity: "bench-query"})
		if err != nil {
			b.Fatalf("Dial %s (PRIVBO_BENCH_CURATOR): %v", addr, err)
		}
		b.Cleanup(func() { conn.Close() })
		client = curatorv1.NewCuratorServiceClient(conn)
	} else {
		client = benchCurator(b, diabetesPath, "progression", "bench-query", "")
	}
	ctx := context.Background()
	const rows = 442
	all := make([]uint64, rows)
	for i := range all {
		all[i] = uint64(i)
	}
	if _, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: all}); err != nil {
		b.Fatalf("warming the answers: %v", err)
	}
	// query is safe to call from several goroutines (it reports with b.Errorf).
	query := func(b *testing.B, i int) (time.Duration, bool) {
		start := time.Now()
		resp, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{uint64(i % rows)}})
		el := time.Since(start)
		if err != nil {
			b.Errorf("query of row %d: %v", i%rows, err)
			return 0, false
		}
		if obs := resp.GetObservations(); len(obs) != 1 || !obs[0].GetReplayed() {
			b.Errorf("query of row %d: %d observations; want one cached (replayed) answer", i%rows, len(obs))
			return 0, false
		}
		return el, true
	}
	report := func(b *testing.B, lat []time.Duration, wall time.Duration) {
		slices.Sort(lat)
		q := func(p float64) float64 {
			return float64(lat[min(len(lat)-1, int(p*float64(len(lat))))].Microseconds()) / 1000
		}
		b.ReportMetric(float64(len(lat))/wall.Seconds(), "queries/s")
		b.ReportMetric(q(0.50), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
	}
	b.Run("sequential", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		k := 0
		for b.Loop() {
			el, ok := query(b, k)
			if !ok {
				b.FailNow()
			}
			lat = append(lat, el)
			k++
		}
		report(b, lat, time.Since(start))
	})
	// batch-10: one caller asking 10 cached rows per request, the request shape of a
	// GP-BUCB study with q = 10; reported per row answered.
	b.Run("batch-10", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		start := time.Now()
		answered := 0
		for k := 0; b.Loop(); k++ {
			req := &curatorv1.QueryRequest{Indices: make([]uint64, 10)}
			for j := range req.Indices {
				req.Indices[j] = uint64((10*k + j) % rows)
			}
			t0 := time.Now()
			resp, err := client.Query(ctx, req)
			if err != nil || len(resp.GetObservations()) != 10 {
				b.Fatalf("batch query: %v", err)
			}
			lat = append(lat, time.Since(t0))
			answered += 10
		}
		wall := time.Since(start)
		slices.Sort(lat)
		b.ReportMetric(float64(answered)/wall.Seconds(), "rows/s")
		b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
	})
	for _, callers := range []int{2, 4, 8} {
		b.Run(fmt.Sprintf("parallel-%d", callers), func(b *testing.B) {
			var (
				mu  sync.Mutex
				lat = make([]time.Duration, 0, b.N)
				wg  sync.WaitGroup
				ch  = make(chan int, callers)
			)
			b.ResetTimer()
			start := time.Now()
			for w := range callers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mine := make([]time.Duration, 0, b.N/callers+1)
					for i := range ch {
						if el, ok := query(b, i*7+w); ok {
							mine = append(mine, el)
						}
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			for i := range b.N {
				ch <- i
			}
			close(ch)
			wg.Wait()
			wall := time.Since(start)
			b.StopTimer()
			if b.Failed() {
				return
			}
			report(b, lat, wall)
		})
	}
}
