package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/privbo/privbo/internal/testlog"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

// logLines returns the JSON lines of buf whose message is msg.
func logLines(t *testing.T, buf *testlog.Buffer, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// TestAuthFailuresThrottleAndSampling: a peer may fail Burst times at once and Rate
// per second after that; beyond, it is refused with a retry hint; the first Logged of
// its failures and refusals per interval are to be logged, the others are summarised
// in one line when the interval ends. Other peers are not affected.
func TestAuthFailuresThrottleAndSampling(t *testing.T) {
	log, buf := testlog.New()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	a := NewAuthFailures(AuthFailureLimits{Rate: 2, Burst: 3, Logged: 2, LogInterval: time.Minute}, log)
	a.now = clock.now

	var logged []bool
	for range 3 {
		if ok, _, _ := a.admit("10.0.0.1"); !ok {
			t.Fatal("a peer with failures left in its burst was refused")
		}
		logged = append(logged, a.failed("10.0.0.1"))
	}
	if fmt.Sprint(logged) != "[true true false]" {
		t.Errorf("failures logged = %v, want the first 2 (Logged) only", logged)
	}
	ok, wait, logIt := a.admit("10.0.0.1")
	if ok || wait != 500*time.Millisecond || logIt {
		t.Errorf("admit after the burst = %v, %s, log %v; want refused, retry after 500ms (one failure at 2/s), not logged", ok, wait, logIt)
	}
	if ok, _, _ := a.admit("10.0.0.2"); !ok {
		t.Error("another peer was refused")
	}
	clock.advance(250 * time.Millisecond)
	if ok, wait, _ := a.admit("10.0.0.1"); ok || wait != 250*time.Millisecond {
		t.Errorf("admit half a token later = %v, %s; want refused, retry after 250ms", ok, wait)
	}
	clock.advance(250 * time.Millisecond)
	if ok, _, _ := a.admit("10.0.0.1"); !ok {
		t.Error("the peer is still refused once its bucket holds a failure again")
	}
	a.failed("10.0.0.1")
	for range 5 {
		a.admit("10.0.0.1")
	}
	if n := len(logLines(t, buf, "failed authentications not logged one by one")); n != 0 {
		t.Fatalf("%d summaries before the interval ended, want 0", n)
	}

	clock.advance(time.Minute)
	a.Flush()
	sums := logLines(t, buf, "failed authentications not logged one by one")
	if len(sums) != 1 {
		t.Fatalf("%d summaries after the interval, want 1:\n%s", len(sums), buf)
	}
	// Unlogged: the third failure, the refusals at 0, 250 ms and the five at the end,
	// and the fourth failure.
	if s := sums[0]; s["peer"] != "10.0.0.1" || s["failed"] != 2.0 || s["refused"] != 7.0 {
		t.Errorf("summary = %v, want peer 10.0.0.1, 2 failed, 7 refused", s)
	}
	a.Flush()
	if n := len(logLines(t, buf, "failed authentications not logged one by one")); n != 1 {
		t.Errorf("a second Flush logged again: %d summaries", n)
	}
	// After a quiet minute the bucket is full and the peer is forgotten.
	if n := a.lru.Len(); n != 0 {
		t.Errorf("%d peers kept after they recovered, want 0", n)
	}
}

// TestAuthFailuresLRU: the table holds at most MaxPeers peers; the one that failed
// least recently is forgotten first, with its summary.
func TestAuthFailuresLRU(t *testing.T) {
	log, buf := testlog.New()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	a := NewAuthFailures(AuthFailureLimits{Rate: 1, Burst: 1, Logged: 1, MaxPeers: 3}, log)
	a.now = clock.now
	for _, p := range []string{"a", "a", "b", "c", "a", "d"} {
		a.failed(p)
		clock.advance(time.Millisecond)
	}
	if n := a.lru.Len(); n != 3 || len(a.peers) != 3 {
		t.Fatalf("table holds %d (%d), want 3", n, len(a.peers))
	}
	if _, ok := a.peers["b"]; ok {
		t.Error("b, the least recent, was kept")
	}
	if ok, _, _ := a.admit("b"); !ok {
		t.Error("a forgotten peer is still refused")
	}
	if ok, _, _ := a.admit("a"); ok {
		t.Error("a, which failed recently, was forgotten")
	}
	if n := len(logLines(t, buf, "failed authentications not logged one by one")); n != 0 {
		t.Errorf("b had nothing unlogged, yet %d summaries", n)
	}
}

// TestAuthFailuresOff: a negative rate turns the throttle off; the log stays sampled.
func TestAuthFailuresOff(t *testing.T) {
	log, _ := testlog.New()
	a := NewAuthFailures(AuthFailureLimits{Rate: -1, Logged: 1}, log)
	logged := 0
	for range 100 {
		if ok, _, _ := a.admit("p"); !ok {
			t.Fatal("refused with the throttle off")
		}
		if a.failed("p") {
			logged++
		}
	}
	if logged != 1 {
		t.Errorf("%d failures logged, want 1", logged)
	}
}

func TestPeerKey(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 5000}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:192.0.2.7"), Port: 5000}, "192.0.2.7"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:3:4:5:6"), Port: 1}, "2001:db8:1:2::/64"},
		{&net.TCPAddr{IP: net.ParseIP("2001:db8:1:2:ffff::9"), Port: 2}, "2001:db8:1:2::/64"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: tc.addr})
		if got := peerKey(ctx); got != tc.want {
			t.Errorf("peerKey(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
	if got := peerKey(context.Background()); got != "unknown" {
		t.Errorf("peerKey(no peer) = %q", got)
	}
}

// serveHealth serves the health service with ServerOptions(cfg) over bufconn and
// returns a client connection.
func serveHealth(t *testing.T, cfg ServerConfig) *grpc.ClientConn {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	srv := grpc.NewServer(ServerOptions(cfg)...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(lis)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestFailedAuthenticationThroughServer: a client flooding the server with a wrong
// token gets Burst UNAUTHENTICATED answers, then RESOURCE_EXHAUSTED with a retry hint
// without its token being checked (a right one from the same peer too, until the
// bucket refills); the log holds Logged lines for the flood and, once the interval
// ends, one summary.
func TestFailedAuthenticationThroughServer(t *testing.T) {
	log, buf := testlog.New()
	clock := &fakeClock{t: time.Unix(1000, 0)}
	failures := NewAuthFailures(AuthFailureLimits{Rate: 1, Burst: 5, Logged: 3, LogInterval: time.Minute}, log)
	failures.now = clock.now
	conn := serveHealth(t, ServerConfig{Logger: log, Auth: Auth{Tokens: map[string]string{HashToken("right-token-0123"): "acme"}}, AuthFailures: failures})
	client := healthpb.NewHealthClient(conn)
	call := func(token string) error {
		ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		return err
	}
	if err := call("right-token-0123"); err != nil {
		t.Fatalf("right token: %v", err)
	}
	const flood = 1000
	counts := map[codes.Code]int{}
	for range flood {
		err := call("wrong-token")
		counts[status.Code(err)]++
		if status.Code(err) == codes.ResourceExhausted {
			st := status.Convert(err)
			if !strings.Contains(st.Message(), "too many failed authentications from bufconn") || len(st.Details()) != 1 {
				t.Fatalf("refusal = %v, want one naming the failed authentications, with a RetryInfo", err)
			}
			if d := st.Details()[0].(*errdetails.RetryInfo).GetRetryDelay().AsDuration(); d != time.Second {
				t.Fatalf("retry hint %s, want 1s", d)
			}
		}
	}
	if counts[codes.Unauthenticated] != 5 || counts[codes.ResourceExhausted] != flood-5 {
		t.Errorf("answers to the flood = %v, want 5 Unauthenticated and %d ResourceExhausted", counts, flood-5)
	}
	if err := call("right-token-0123"); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("right token from the throttled peer = %v, want ResourceExhausted until the bucket refills", err)
	}
	clock.advance(time.Second)
	if err := call("right-token-0123"); err != nil {
		t.Errorf("right token once a failure is allowed again: %v", err)
	}
	rpcs := logLines(t, buf, "rpc")
	if len(rpcs) != 2+3 { // the two right calls that went through, and Logged of the rest
		t.Errorf("%d rpc lines, want 5:\n%s", len(rpcs), buf)
	}
	for _, l := range rpcs {
		if l["code"] != "OK" && l["peer"] != "bufconn" {
			t.Errorf("a refused request's line does not name its peer: %v", l)
		}
	}
	clock.advance(time.Minute)
	failures.Flush()
	sums := logLines(t, buf, "failed authentications not logged one by one")
	if len(sums) != 1 || sums[0]["failed"] != 2.0 || sums[0]["refused"] != float64(flood-5+1) {
		t.Errorf("summaries = %v, want one: 2 failed, %d refused", sums, flood-5+1)
	}
	if n := strings.Count(buf.String(), "\n"); n > 10 {
		t.Errorf("%d log lines for %d failed requests, want at most 10", n, flood)
	}
}

// countingWriter counts the bytes a logger writes.
type countingWriter struct{ n atomic.Int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n.Add(int64(len(p))); return len(p), nil }
func (w *countingWriter) Sync() error                 { return nil }

// BenchmarkFailedAuthentication floods a server over loopback TCP with requests whose
// bearer token is wrong, from GOMAXPROCS goroutines of one client (one peer), and
// reports the log bytes written per request and the share answered UNAUTHENTICATED
// (the rest are refused by the throttle before their token is checked): "unthrottled"
// is the server before the per-peer throttle and sampled log (negative rate, every
// failure logged), "defaults" the default AuthFailureLimits.
//
//	go test -run '^$' -bench BenchmarkFailedAuthentication -benchtime 5s ./pkg/transport
func BenchmarkFailedAuthentication(b *testing.B) {
	for _, tc := range []struct {
		name string
		lim  AuthFailureLimits
	}{
		{"unthrottled", AuthFailureLimits{Rate: -1, Logged: math.MaxInt}},
		{"defaults", AuthFailureLimits{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			w := &countingWriter{}
			log := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), w, zapcore.InfoLevel))
			srv := grpc.NewServer(ServerOptions(ServerConfig{Logger: log, Auth: Auth{Tokens: map[string]string{HashToken("right-token-0123"): "acme"}},
				AuthFailures: NewAuthFailures(tc.lim, log)})...)
			healthpb.RegisterHealthServer(srv, health.NewServer())
			lis, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go srv.Serve(lis)
			defer srv.Stop()
			conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			client := healthpb.NewHealthClient(conn)
			var unauthenticated atomic.Int64
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				ctx := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer wrong-token")
				for pb.Next() {
					_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
					switch status.Code(err) {
					case codes.Unauthenticated:
						unauthenticated.Add(1)
					case codes.ResourceExhausted:
					default:
						b.Errorf("wrong token: %v", err)
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(w.n.Load())/float64(b.N), "log-bytes/op")
			b.ReportMetric(float64(unauthenticated.Load())/float64(b.N), "unauthenticated/op")
		})
	}
}
