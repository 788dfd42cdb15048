package server_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/curatortest"
	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/server"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// tcpProxy forwards TCP connections to target until it is cut. Cut blackholes the
// database: the connections open stay open on the client's side but nothing passes
// (what a client sees of a network partition or a frozen server: writes succeed, no
// answer comes), and new connections are accepted and never answered. Restore resets
// every connection held (as a partition that outlasted the TCP timeouts) and forwards
// new ones again.
type tcpProxy struct {
	lis    net.Listener
	target string

	mu    sync.Mutex
	cut   bool
	pairs map[*proxyPair]bool
	held  []net.Conn
	wg    sync.WaitGroup
}

type proxyPair struct {
	client, server net.Conn
	frozen         atomic.Bool
}

func startProxy(t *testing.T, target string) *tcpProxy {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{lis: lis, target: target, pairs: map[*proxyPair]bool{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *tcpProxy) addr() string { return p.lis.Addr().String() }

func (p *tcpProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.lis.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.mu.Unlock()
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		pair := &proxyPair{client: c, server: s}
		p.mu.Lock()
		if p.cut { // cut while dialling
			s.Close()
			p.held = append(p.held, c)
			p.mu.Unlock()
			continue
		}
		p.pairs[pair] = true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(pair, c, s)
		go p.pump(pair, s, c)
	}
}

// pump copies src to dst until src ends; once the pair is frozen it drops what the
// client sends and leaves the client's side open.
func (p *tcpProxy) pump(pair *proxyPair, src, dst net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !pair.frozen.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil && !pair.frozen.Load() {
				pair.client.Close()
				pair.server.Close()
				return
			}
		}
		if err != nil {
			if !pair.frozen.Load() {
				pair.client.Close()
				pair.server.Close()
			}
			// The server's side of a frozen pair ends here; the client's stays open.
			return
		}
	}
}

// Cut blackholes the database.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for pair := range p.pairs {
		pair.frozen.Store(true)
		pair.server.Close()
	}
}

// Restore resets the connections held and forwards new ones.
func (p *tcpProxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
	for pair := range p.pairs {
		if pair.frozen.Load() {
			pair.client.Close()
			delete(p.pairs, pair)
		}
	}
	for _, c := range p.held {
		c.Close()
	}
	p.held = nil
}

func (p *tcpProxy) close() {
	p.lis.Close()
	p.mu.Lock()
	for pair := range p.pairs {
		pair.client.Close()
		pair.server.Close()
	}
	for _, c := range p.held {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// withParam adds key=value to a DSN in URL or key=value form.
func withParam(dsn, key, value string) string {
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		return dsn + sep + key + "=" + value
	}
	return dsn + " " + key + "=" + value
}

// viaProxy is dsn with its host and port replaced by addr's (URL form only).
func viaProxy(t *testing.T, dsn, addr string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dsn, "://") {
		t.Fatalf("the outage test needs a URL DSN, got %q", dsn)
	}
	host := net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port))
	if !strings.Contains(dsn, host) {
		t.Fatalf("the outage test needs a DSN naming host:port (%s) explicitly", host)
	}
	return strings.Replace(dsn, host, addr, 1)
}

func ledgerReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if i, ok := d.(*errdetails.ErrorInfo); ok {
			return i.GetReason()
		}
	}
	return ""
}

// healthWatch follows the curator's health status through the health service's Watch
// stream, which sends the status and then each change: the test waits on those events,
// not on a poll. await notes when each arrived, for the log only.
type healthWatch struct {
	updates chan bool
	serving bool // the last status await read
}

func watchHealth(t *testing.T, ctx context.Context, c healthpb.HealthClient) *healthWatch {
	t.Helper()
	stream, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	h := &healthWatch{updates: make(chan bool, 64), serving: true}
	go func() {
		defer close(h.updates)
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			select {
			case h.updates <- resp.GetStatus() == healthpb.HealthCheckResponse_SERVING:
			case <-ctx.Done():
				return
			}
		}
	}()
	return h
}

// await returns when the status is serving (at once if the last change received says
// so), and when that was seen. Its guard against a hang is two minutes.
func (h *healthWatch) await(t *testing.T, serving bool) time.Time {
	t.Helper()
	for drained := false; !drained; { // the changes that came meanwhile, in order
		select {
		case ok, open := <-h.updates:
			if !open {
				t.Fatal("the health watch ended")
			}
			h.serving = ok
		default:
			drained = true
		}
	}
	guard := time.After(2 * time.Minute)
	for h.serving != serving {
		select {
		case ok, open := <-h.updates:
			if !open {
				t.Fatal("the health watch ended")
			}
			h.serving = ok
		case <-guard:
			t.Fatalf("health did not turn serving=%v", serving)
		}
	}
	return time.Now()
}

// TestLedgerOutage runs a curator on a PostgreSQL ledger through a TCP proxy the test
// controls. Terminating every backend of the curator's pools (pg_terminate_backend, from
// a connection of the test's own) under a steady load of releases and budget reads
// fails at most one request per terminated connection; cutting the proxy turns the
// health NOT_SERVING and makes ledger calls fail UNAVAILABLE (reason
// LEDGER_UNAVAILABLE), ended by the ledger call timeout instead of hanging until the
// client's deadline; restoring it turns the health SERVING again. The times are logged
// (docs/EXPERIMENTS.md has the figures); the test waits on events (successful requests,
// the health service's Watch stream) and asserts no time: a call not ended by the call
// timeout would end with the client's deadline, DEADLINE_EXCEEDED. The terminations
// run on a curator whose call timeout (2 min) only guards against a hang, so that a
// request slow on a loaded machine is not failed UNAVAILABLE and counted against the
// terminated connections; the cuts on one with a 2 s call timeout.
func TestLedgerOutage(t *testing.T) {
	ctx := context.Background()
	lc := curatortest.PostgresLedger(t)
	direct, err := pgx.Connect(ctx, lc.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close(ctx)
	dcfg, _ := pgx.ParseConfig(lc.DSN)
	proxy := startProxy(t, net.JoinHostPort(dcfg.Host, fmt.Sprint(dcfg.Port)))
	app := lc.Schema // the curator's connections' application_name: this test's alone
	const callTimeout = 2 * time.Second
	lc.DSN = withParam(viaProxy(t, lc.DSN, proxy.addr()), "application_name", app)
	lc.CallTimeout = 2 * time.Minute
	cur := curatortest.Start(t, curatortest.Options{Budget: ledger.Cost{Epsilon: 1e4, Delta: 0.5}, Ledger: lc})
	client := cur.Client(t, "acme")

	// Terminating every backend, three times, under load.
	var (
		stop          atomic.Bool
		okN, failN    atomic.Int64
		label         atomic.Int64
		failuresMu    sync.Mutex
		failures      []string
		wg            sync.WaitGroup
		workers       = 6
		terminated    int
		rctx, rcancel = context.WithTimeout(ctx, 5*time.Minute)
		succeeded     = make(chan struct{}, 1) // a request succeeded since the last look
	)
	defer rcancel()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				var err error
				if w%2 == 0 {
					_, err = client.GetBudget(rctx, &curatorv1.GetBudgetRequest{})
				} else {
					req := &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 0.01, Delta: 1e-9, Label: fmt.Sprintf("outage-%d", label.Add(1))}
					_, err = curatorclient.FetchProjection(rctx, client, req)
				}
				if err != nil {
					failN.Add(1)
					failuresMu.Lock()
					failures = append(failures, fmt.Sprintf("%v (%s)", status.Code(err), status.Convert(err).Message()))
					failuresMu.Unlock()
					continue
				}
				okN.Add(1)
				select {
				case succeeded <- struct{}{}:
				default:
				}
			}
		}()
	}
	waitOK := func(n int64) {
		t.Helper()
		target := okN.Load() + n
		guard := time.After(5 * time.Minute) // only against a hang
		for okN.Load() < target {
			select {
			case <-succeeded:
			case <-guard:
				t.Fatalf("the load made %d of %d more successful requests", okN.Load()-target+n, n)
			}
		}
	}
	waitOK(30)
	for range 3 {
		var n int
		if err := direct.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1`, app).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			t.Fatal("no backend of the curator to terminate")
		}
		terminated += n
		waitOK(30)
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("terminated %d backends in 3 sweeps under load: %d requests failed, %d succeeded; failures: %q", terminated, failN.Load(), okN.Load(), failures)
	for _, line := range strings.Split(cur.Logs.String(), "\n") {
		if strings.Contains(line, "privacy ledger unavailable") {
			t.Logf("curator: %s", line)
		}
	}
	if f := failN.Load(); f > int64(terminated) {
		t.Errorf("%d requests failed for %d terminated connections, want at most one per connection: %v", f, terminated, failures)
	}
	for _, f := range failures {
		if !strings.HasPrefix(f, codes.Unavailable.String()) {
			t.Errorf("a request failed with %s, want UNAVAILABLE", f)
		}
	}

	// Cutting and restoring the database, three times, on a curator whose ledger calls
	// are bounded by callTimeout.
	cur.Stop(t)
	lc.CallTimeout = callTimeout
	cur = curatortest.Start(t, curatortest.Options{Budget: ledger.Cost{Epsilon: 1e4, Delta: 0.5}, Ledger: lc})
	conn := cur.Conn(t, "acme")
	client = curatorv1.NewCuratorServiceClient(conn)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	health := watchHealth(t, hctx, healthpb.NewHealthClient(conn))
	health.await(t, true)
	var downs, ups []time.Duration
	for i := range 3 {
		cutAt := time.Now()
		proxy.Cut()
		downs = append(downs, health.await(t, false).Sub(cutAt))

		// Ledger calls fail UNAVAILABLE with the reason, ended by the call timeout: one
		// that waited for the client's deadline would end DEADLINE_EXCEEDED.
		for _, call := range []struct {
			name string
			do   func(context.Context) error
		}{
			{"GetBudget", func(ctx context.Context) error {
				_, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
				return err
			}},
			{"ReleaseProjection", func(ctx context.Context) error {
				_, err := curatorclient.FetchProjection(ctx, client,
					&curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 0.01, Delta: 1e-9, Label: fmt.Sprintf("cut-%d", i)})
				return err
			}},
		} {
			cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
			start := time.Now()
			err := call.do(cctx)
			took := time.Since(start)
			cancel()
			if status.Code(err) != codes.Unavailable || ledgerReason(err) != string(refusal.LedgerUnavailable) {
				t.Errorf("%s with the database cut: %v (reason %q), want UNAVAILABLE with reason %s", call.name, err, ledgerReason(err), refusal.LedgerUnavailable)
			}
			t.Logf("cut %d: %s failed after %v: %v", i, call.name, took.Round(time.Millisecond), status.Convert(err).Message())
		}

		restoredAt := time.Now()
		proxy.Restore()
		ups = append(ups, health.await(t, true).Sub(restoredAt))
		if _, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{}); err != nil {
			t.Errorf("GetBudget after the database came back: %v", err)
		}
	}
	t.Logf("outage → NOT_SERVING: %v; return → SERVING: %v (check every %v, bounded by %v)", downs, ups, server.LedgerCheckInterval, server.LedgerCheckTimeout)
}
