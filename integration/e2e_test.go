package integration

import (
	"bufio"
	"bytes"
	"context"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/curatorclient"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// The paper's hospital scenario at the settings: r = 5, ε = e², δ = 1e-4, T = 40.
var studySettings = modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 40}

func TestStudyEndToEnd(t *testing.T) {
	cur := startCurator(t, diabetesConfig(t, t.TempDir()))
	client := cur.client(t, "vendor-a")
	ctx := context.Background()

	info, err := client.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if info.GetRows() != 442 || info.GetDimension() != 10 || info.GetName() != "diabetes" {
		t.Fatalf("GetDatasetInfo = %d rows × %d, name %q; want 442 × 10, diabetes", info.GetRows(), info.GetDimension(), info.GetName())
	}
	if info.GetProtectedUnit() == "" {
		t.Error("GetDatasetInfo: no protected unit stated")
	}

	res, err := modeler.Run(ctx, curatorclient.New(client), studySettings)
	if err != nil {
		t.Fatal(err)
	}
	if res.Iterations != 40 || len(res.Queried) != 40 || len(res.Values) != 40 {
		t.Fatalf("Run: %d iterations, %d queried, %d values; want 40 each", res.Iterations, len(res.Queried), len(res.Values))
	}
	seen := map[int]bool{}
	for _, i := range res.Queried {
		if seen[i] {
			t.Errorf("row %d queried twice without --allow-repeats", i)
		}
		seen[i] = true
	}
	ds := loadDiabetes(t)
	for k, i := range res.Queried {
		if res.Values[k] != ds.Y[i] {
			t.Errorf("answer for row %d = %g, want the recorded progression %g", i, res.Values[k], ds.Y[i])
		}
	}
	if math.Abs(res.EpsilonSpent-math.Exp(2)) > 1e-12 || math.Abs(res.DeltaSpent-1e-4) > 1e-18 {
		t.Errorf("spent (ε, δ) = (%g, %g), want (e², 1e-4): one projection, free answers", res.EpsilonSpent, res.DeltaSpent)
	}

	// The same study again: the projection is replayed, the answers are replayed, nothing is charged.
	again, err := modeler.Run(ctx, curatorclient.New(client), modeler.Config{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 40, InitialIndex: res.Queried[0]})
	if err != nil {
		t.Fatal(err)
	}
	if again.ReleaseID != res.ReleaseID {
		t.Errorf("repeated release id = %s, want %s", again.ReleaseID, res.ReleaseID)
	}
	if again.EpsilonSpent != res.EpsilonSpent || again.DeltaSpent != res.DeltaSpent {
		t.Errorf("repeating the study spent more: (%g, %g) → (%g, %g)", res.EpsilonSpent, res.DeltaSpent, again.EpsilonSpent, again.DeltaSpent)
	}

	// A new release (new label) composes: the spend doubles.
	p, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 5, Epsilon: math.Exp(2), Delta: 1e-4, Label: "second"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Replayed || p.ReleaseID == res.ReleaseID {
		t.Errorf("labelled release: replayed=%v id=%s; want a new release", p.Replayed, p.ReleaseID)
	}
	if got, want := p.Budget.GetEpsilonSpent(), 2*math.Exp(2); math.Abs(got-want) > 1e-12 {
		t.Errorf("spent ε after a second release = %g, want %g", got, want)
	}

	// The health service answers SERVING.
	hc := healthpb.NewHealthClient(dial(t, cur.srv.Addr(), "vendor-a"))
	hr, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: curatorv1.CuratorService_ServiceDesc.ServiceName})
	if err != nil || hr.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Errorf("health Check = %v, %v; want SERVING", hr.GetStatus(), err)
	}
}

func loadDiabetes(t *testing.T) *dataset.Dataset {
	t.Helper()
	ds, err := dataset.LoadCSV(diabetesPath, dataset.Options{Target: "progression"})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

func TestRefusals(t *testing.T) {
	cfg := diabetesConfig(t, t.TempDir())
	cfg.Budget.Epsilon, cfg.Budget.Delta = 2, 1e-3
	cur := startCurator(t, cfg)
	client := cur.client(t, "vendor-b")
	ctx := context.Background()

	for _, tc := range []struct {
		name string
		req  *curatorv1.ReleaseProjectionRequest
		code codes.Code
		msg  string
	}{
		{"zero r", &curatorv1.ReleaseProjectionRequest{Dimension: 0, Epsilon: 1, Delta: 1e-5}, codes.InvalidArgument, "r"},
		{"negative epsilon", &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: -1, Delta: 1e-5}, codes.InvalidArgument, "epsilon"},
		{"NaN epsilon", &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: math.NaN(), Delta: 1e-5}, codes.InvalidArgument, "epsilon"},
		{"delta one", &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1}, codes.InvalidArgument, "delta"},
		{"huge r", &curatorv1.ReleaseProjectionRequest{Dimension: 5000, Epsilon: 1, Delta: 1e-5}, codes.InvalidArgument, "maximum"},
		{"over budget", &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 2.5, Delta: 1e-5}, codes.ResourceExhausted, "remaining"},
	} {
		_, err := curatorclient.FetchProjection(ctx, client, tc.req)
		if status.Code(err) != tc.code || !strings.Contains(strings.ToLower(status.Convert(err).Message()), tc.msg) {
			t.Errorf("%s: FetchProjection error = %v; want %v mentioning %q", tc.name, err, tc.code, tc.msg)
		}
	}
	bal, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if bal.GetBudget().GetEpsilonSpent() != 0 || bal.GetBudget().GetDeltaSpent() != 0 {
		t.Errorf("refused requests spent (%g, %g), want nothing", bal.GetBudget().GetEpsilonSpent(), bal.GetBudget().GetDeltaSpent())
	}
	// Spend most of the budget, then be refused the rest.
	if _, err := curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1.5, Delta: 1e-5}); err != nil {
		t.Fatal(err)
	}
	_, err = curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5})
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second release beyond the budget: %v, want ResourceExhausted", err)
	}

	for _, tc := range []struct {
		name    string
		indices []uint64
	}{
		{"empty", nil},
		{"out of range", []uint64{442}},
		{"huge", []uint64{1 << 40}},
	} {
		_, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: tc.indices})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("Query(%s) error = %v, want InvalidArgument", tc.name, err)
		}
	}
	// A malformed identity is refused before any handler runs.
	bad := curatorv1.NewCuratorServiceClient(rawConn(t, cur.srv.Addr(), nil))
	_, err = bad.GetBudget(transport.OutgoingIdentity(ctx, "has space"), &curatorv1.GetBudgetRequest{})
	if status.Code(err) != codes.Unauthenticated {
		t.Errorf("bad identity: %v, want Unauthenticated", err)
	}
}

// rawConn dials without the identity interceptor, recording every response message's
// bytes into rec when it is non-nil.
func rawConn(t *testing.T, addr string, rec *recorder) *grpc.ClientConn {
	t.Helper()
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	if rec != nil {
		opts = append(opts,
			grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
				err := inv(ctx, method, req, reply, cc, o...)
				rec.add(reply)
				return err
			}),
			grpc.WithStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
				cs, err := s(ctx, desc, cc, method, o...)
				return recordingStream{cs, rec}, err
			}))
	}
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

type recorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recorder) add(m any) {
	if pm, ok := m.(proto.Message); ok {
		b, _ := proto.Marshal(pm)
		r.mu.Lock()
		r.buf.Write(b)
		r.mu.Unlock()
	}
}

type recordingStream struct {
	grpc.ClientStream
	rec *recorder
}

func (s recordingStream) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if err == nil {
		s.rec.add(m)
	}
	return err
}

// TestNoRawRowLeaves scans every response byte and every log line of a full study for the
// dataset's rows: as the CSV text, as the scaled float64 bytes, and as formatted numbers.
func TestNoRawRowLeaves(t *testing.T) {
	cur := startCurator(t, diabetesConfig(t, t.TempDir()))
	rec := &recorder{}
	ctx := transport.OutgoingIdentity(context.Background(), "vendor-c")
	client := curatorv1.NewCuratorServiceClient(rawConn(t, cur.srv.Addr(), rec))
	if _, err := modeler.Run(ctx, curatorclient.New(client), studySettings); err != nil {
		t.Fatal(err)
	}
	// Some errors too: their messages must not carry data either.
	client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{9999}})
	curatorclient.FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1e9, Delta: 0.9})
	cur.stop(t)

	responses := rec.buf.Bytes()
	logs := cur.logs.Bytes()
	if len(responses) < 442*5*8 || len(logs) == 0 {
		t.Fatalf("recorded %d response bytes and %d log bytes; the scan would prove nothing", len(responses), len(logs))
	}
	ds := loadDiabetes(t)
	f, err := os.Open(diabetesPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	line := 0
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ",")
		features := strings.Join(fields[:len(fields)-1], ",")
		for name, hay := range map[string][]byte{"responses": responses, "logs": logs} {
			if bytes.Contains(hay, []byte(features)) {
				t.Errorf("%s contain the CSV text of row %d", name, line)
			}
			row := ds.Row(line)
			if bytes.Contains(hay, matrixio.AppendFloat64s(nil, row)) {
				t.Errorf("%s contain the scaled float64 bytes of row %d", name, line)
			}
			var txt []string
			for _, v := range row[:3] {
				txt = append(txt, strconv.FormatFloat(v, 'g', -1, 64))
			}
			if bytes.Contains(hay, []byte(strings.Join(txt, ","))) {
				t.Errorf("%s contain the scaled values of row %d as text", name, line)
			}
		}
		line++
	}
	if line != 442 {
		t.Fatalf("scanned %d rows, want 442", line)
	}
}

// TestRestartReplaysReleases restarts the curator on the same state directory: the same
// requests return the same bytes and values and cost nothing more.
func TestRestartReplaysReleases(t *testing.T) {
	state := t.TempDir()
	cfg := diabetesConfig(t, state)
	first := startCurator(t, cfg)
	ctx := context.Background()
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 4, Epsilon: 2, Delta: 1e-5}
	p1, err := curatorclient.FetchProjection(ctx, first.client(t, "vendor-d"), req)
	if err != nil {
		t.Fatal(err)
	}
	q1, err := first.client(t, "vendor-d").Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{3, 7, 3}})
	if err != nil {
		t.Fatal(err)
	}
	first.stop(t)

	second := startCurator(t, cfg)
	c2 := second.client(t, "vendor-d")
	p2, err := curatorclient.FetchProjection(ctx, c2, req)
	if err != nil {
		t.Fatal(err)
	}
	if !p2.Replayed || p2.ReleaseID != p1.ReleaseID {
		t.Errorf("after restart: replayed=%v id=%s, want a replay of %s", p2.Replayed, p2.ReleaseID, p1.ReleaseID)
	}
	if !equalBits(p1.Z, p2.Z) {
		t.Error("after restart the projection differs")
	}
	q2, err := c2.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{3, 7, 3}})
	if err != nil {
		t.Fatal(err)
	}
	for k := range q1.GetObservations() {
		if a, b := q1.GetObservations()[k], q2.GetObservations()[k]; a.GetIndex() != b.GetIndex() || a.GetValue() != b.GetValue() || !b.GetReplayed() {
			t.Errorf("observation %d after restart = %v, want the replay of %v", k, b, a)
		}
	}
	if got := p2.Budget.GetEpsilonSpent(); got != 2 {
		t.Errorf("spent ε after restart and replay = %g, want 2", got)
	}
}

func equalBits(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
			return false
		}
	}
	return true
}

// TestConcurrentIdenticalReleases: many concurrent identical requests make one release
// and one charge.
func TestConcurrentIdenticalReleases(t *testing.T) {
	cur := startCurator(t, diabetesConfig(t, t.TempDir()))
	client := cur.client(t, "vendor-e")
	ctx := context.Background()
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-6}
	var wg sync.WaitGroup
	ids := make([]string, 16)
	errs := make([]error, 16)
	for k := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := curatorclient.FetchProjection(ctx, client, req)
			errs[k] = err
			if err == nil {
				ids[k] = p.ReleaseID
			}
		}()
	}
	wg.Wait()
	for k, err := range errs {
		if err != nil {
			t.Fatalf("request %d: %v", k, err)
		}
	}
	sort.Strings(ids)
	if ids[0] != ids[len(ids)-1] {
		t.Errorf("concurrent identical requests got different releases: %v", ids)
	}
	b, err := client.GetBudget(ctx, &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.GetBudget().GetEpsilonSpent(); got != 1 {
		t.Errorf("spent ε = %g after 16 identical requests, want 1", got)
	}
}
