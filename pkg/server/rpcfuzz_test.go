package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/privbo/privbo/pkg/config"
	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// The fuzz targets of this file send what a client may send — any bytes as any
// method's request, any identity header, and typed requests built from fuzz input —
// to a curator started by Start (the binary's path: options, interceptors, the curator
// service with jobs, health and reflection) over an in-memory connection, through a
// real gRPC client. A client's mistake must never be answered INTERNAL, UNKNOWN,
// DATA_LOSS or UNAVAILABLE, and never logged at error level (where panics and their
// stacks go); an invalid request must be answered INVALID_ARGUMENT.

// rpcHarness is a curator served over bufconn, a connection to it, and the error-level
// entries of its log.
type rpcHarness struct {
	conn    *grpc.ClientConn
	client  curatorv1.CuratorServiceClient
	errLogs *observer.ObservedLogs
	maxDim  uint32
}

const harnessMaxDim = 8

// newRPCHarness starts the curator over 12 rows with a 0/1 target (so that jobs run)
// and a budget large enough that fuzzed releases reach the mechanisms' calibration
// rather than stopping at the budget check.
func newRPCHarness(tb testing.TB) *rpcHarness {
	tb.Helper()
	dir := tb.TempDir()
	var b strings.Builder
	b.WriteString("a,b,c,y\n")
	for i := range 12 {
		fmt.Fprintf(&b, "%d,%d,%d,%d\n", i%4, (i*7)%11, (i*i)%13, i%2)
	}
	data := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(data, []byte(b.String()), 0o600); err != nil {
		tb.Fatal(err)
	}
	scaling, err := dataset.ParseScaling("none")
	if err != nil {
		tb.Fatal(err)
	}
	core, logs := observer.New(zapcore.ErrorLevel)
	lis := bufconn.Listen(1 << 20)
	srv, err := start(context.Background(), config.Config{
		Listen: "127.0.0.1:0", DataPath: data, Data: dataset.Options{Target: "y", Scaling: scaling},
		StateDir: filepath.Join(dir, "state"), DatasetID: "fuzz",
		Budget: ledger.Cost{Epsilon: 1e6, Delta: 0.5}, MaxProjectionDim: harnessMaxDim, MaxQueryIndices: 64,
		Output: curator.OutputPrivacy{Mechanism: "laplace", Epsilon: 0.5, Lower: 0, Upper: 1},
		Jobs:   config.JobsConfig{Enabled: true, ValidationFraction: 0.5, SplitSeed: 1, MaxGrid: 16, MaxIterations: 8, MaxRunning: 1, BoundsEpsilon: 0.1},
		Logger: zap.New(core),
	}, lis)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &rpcHarness{conn: conn, client: curatorv1.NewCuratorServiceClient(conn), errLogs: logs, maxDim: harnessMaxDim}
}

// rawCodec sends and receives a message's bytes as they are (*[]byte), so that a
// fuzz target can send bytes no protobuf library would produce.
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

// rpcMethod is a method of the served services as the raw fuzzer calls it.
type rpcMethod struct {
	name                         string
	serverStreams, clientStreams bool
	// first ends the call after the first response (streams that stay open).
	first bool
}

// rpcMethods are every method the curator serves: its own service's (read from the
// generated descriptor, so a new method is fuzzed without editing this list), health's
// and reflection's.
func rpcMethods() []rpcMethod {
	var out []rpcMethod
	sd := curatorv1.CuratorService_ServiceDesc
	for _, m := range sd.Methods {
		out = append(out, rpcMethod{name: "/" + sd.ServiceName + "/" + m.MethodName})
	}
	for _, s := range sd.Streams {
		out = append(out, rpcMethod{name: "/" + sd.ServiceName + "/" + s.StreamName, serverStreams: s.ServerStreams, clientStreams: s.ClientStreams})
	}
	return append(out,
		rpcMethod{name: healthpb.Health_Check_FullMethodName},
		rpcMethod{name: healthpb.Health_Watch_FullMethodName, serverStreams: true, first: true},
		rpcMethod{name: reflectionpb.ServerReflection_ServerReflectionInfo_FullMethodName, serverStreams: true, clientStreams: true},
	)
}

// callRaw sends body as the request of m with identity in the identity header (none
// when empty) and returns the call's error (nil for OK).
func (h *rpcHarness) callRaw(m rpcMethod, identity string, body []byte) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if identity != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, transport.IdentityHeader, identity)
	}
	codec := grpc.ForceCodecV2(rawCodec{})
	if !m.serverStreams && !m.clientStreams {
		var out []byte
		return h.conn.Invoke(ctx, m.name, &body, &out, codec)
	}
	st, err := h.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: m.serverStreams, ClientStreams: m.clientStreams}, m.name, codec)
	if err != nil {
		return err
	}
	if err := st.SendMsg(&body); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	for {
		var out []byte
		if err := st.RecvMsg(&out); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if m.first {
			return nil
		}
	}
}

// check fails t when err is a code no client mistake may get, or when the
// curator logged at error level.
func (h *rpcHarness) check(t *testing.T, what string, err error) {
	t.Helper()
	entries := h.errLogs.TakeAll()
	switch c := status.Code(err); c {
	case codes.Internal, codes.Unknown, codes.DataLoss, codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
		t.Fatalf("%s: %v (code %s), want a code that tells the client what it did wrong", what, err, c)
	}
	if len(entries) > 0 {
		t.Fatalf("%s: the curator logged at error level: %q %v", what, entries[0].Message, entries[0].ContextMap())
	}
}

// headerSafe reports whether s can be sent as a metadata value by a gRPC client
// (printable ASCII); other values are refused by the client before anything is sent.
func headerSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func marshalSeed(m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// FuzzRPC sends any bytes as the request of any method, with any identity.
func FuzzRPC(f *testing.F) {
	methods := rpcMethods()
	index := func(name string) uint8 {
		for i, m := range methods {
			if strings.HasSuffix(m.name, "/"+name) {
				return uint8(i)
			}
		}
		panic(name)
	}
	kusner := &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{Algorithm: 1, Iterations: 3, Epsilon: 1, Delta: 1e-3,
		Space: []*curatorv1.HyperparameterRange{{Name: "lambda", Scale: curatorv1.HyperparameterRange_SCALE_LOG, Low: 1e-4, High: 1, Count: 4}}}}}
	for _, s := range []struct {
		method, identity string
		body             []byte
	}{
		{"GetDatasetInfo", "acme", nil},
		{"GetBudget", "", nil},
		{"GetBudget", "_curator", nil},
		{"GetBudget", "has space", nil},
		{"Query", "acme", marshalSeed(&curatorv1.QueryRequest{Indices: []uint64{0, 3, 3, 11}})},
		{"Query", "acme", marshalSeed(&curatorv1.QueryRequest{Indices: []uint64{12, 1 << 40}})},
		{"ReleaseProjection", "acme", marshalSeed(&curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-5, Label: "x"})},
		{"ReleaseProjection", "acme", marshalSeed(&curatorv1.ReleaseProjectionRequest{Dimension: 3, Epsilon: 1, Delta: 1e-300})},
		{"ReleaseProjection", "acme", []byte("\x22\x02\xff\xfe")}, // label: invalid UTF-8
		{"ReleaseProjection", "acme", []byte("garbage request bytes")},
		{"SubmitJob", "acme", marshalSeed(&curatorv1.SubmitJobRequest{Spec: kusner, IdempotencyKey: "k"})},
		{"GetJob", "acme", marshalSeed(&curatorv1.GetJobRequest{Id: "job-x"})},
		{"CancelJob", "acme", marshalSeed(&curatorv1.CancelJobRequest{Id: "job-x"})},
		{"WatchJob", "acme", marshalSeed(&curatorv1.WatchJobRequest{Id: "job-x"})},
		{"ListJobs", "acme", nil},
		{"Check", "", marshalSeed(&healthpb.HealthCheckRequest{Service: curatorv1.CuratorService_ServiceDesc.ServiceName})},
		{"Check", "", []byte("\x0a\x03\xc3\x28a")},
		{"Watch", "", nil},
		{"ServerReflectionInfo", "", marshalSeed(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}})},
		{"ServerReflectionInfo", "", []byte{0xff, 0xff}},
	} {
		f.Add(index(s.method), s.identity, s.body)
	}
	h := newRPCHarness(f)
	f.Fuzz(func(t *testing.T, method uint8, identity string, body []byte) {
		if !headerSafe(identity) {
			return
		}
		m := methods[int(method)%len(methods)]
		h.check(t, fmt.Sprintf("%s(%q) as %q", m.name, body, identity), h.callRaw(m, identity, body))
	})
}

// projectionRequest encodes a ReleaseProjectionRequest by hand, so that the label may
// be invalid UTF-8 (which protobuf libraries refuse to encode).
func projectionRequest(dim uint32, eps, delta float64, label string) []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(dim))
	b = protowire.AppendTag(b, 2, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(eps))
	b = protowire.AppendTag(b, 3, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, math.Float64bits(delta))
	b = protowire.AppendTag(b, 4, protowire.BytesType)
	return protowire.AppendString(b, label)
}

// FuzzReleaseProjection asks for projections with any dimension, ε, δ and label.
func FuzzReleaseProjection(f *testing.F) {
	f.Add(uint32(3), 1.0, 1e-5, "x")
	f.Add(uint32(0), 1.0, 1e-5, "")
	f.Add(uint32(9), 1.0, 1e-5, "")
	f.Add(uint32(2), 1e-300, 1e-5, "")
	f.Add(uint32(2), 1.0, 1e-101, "")
	f.Add(uint32(2), 1.0, 1e-300, "")
	f.Add(uint32(2), 1.0, 5e-324, "")
	f.Add(uint32(2), 1e5, 0.4, "")
	f.Add(uint32(2), math.Inf(1), 1e-5, "")
	f.Add(uint32(2), math.NaN(), 1e-5, "")
	f.Add(uint32(2), 1.0, 1.0, "")
	f.Add(uint32(2), 1.0, math.Copysign(0, -1), "")
	f.Add(uint32(2), 1.0, 1e-5, "\xff")
	f.Add(uint32(2), 1.0, 1e-5, "tab\there")
	f.Add(uint32(2), 1.0, 1e-5, strings.Repeat("é", 33))
	h := newRPCHarness(f)
	method := rpcMethod{name: curatorv1.CuratorService_ReleaseProjection_FullMethodName, serverStreams: true}
	f.Fuzz(func(t *testing.T, dim uint32, eps, delta float64, label string) {
		what := fmt.Sprintf("ReleaseProjection(r=%d, ε=%g, δ=%g, label=%q)", dim, eps, delta, label)
		err := h.callRaw(method, "acme", projectionRequest(dim, eps, delta, label))
		h.check(t, what, err)
		invalid := dim == 0 || dim > h.maxDim || !(eps > 0) || math.IsInf(eps, 0) || !(delta >= projection.MinDelta && delta < 1) ||
			!utf8.ValidString(label) || len(label) > 64
		if invalid && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("%s = %v, want InvalidArgument", what, err)
		}
	})
}

// FuzzSubmitJob submits Kusner and DP-HyPO jobs with any settings; a job the curator
// accepts is cancelled at once, so that the fuzzer does not wait on running jobs.
func FuzzSubmitJob(f *testing.F) {
	f.Add(uint8(0), uint8(1), uint32(3), 1.0, 1e-3, 1e-4, 1.0, uint32(4), "lambda", 0.1, 0.5)
	f.Add(uint8(0), uint8(2), uint32(3), 1.0, 1e-300, 1e-4, 1.0, uint32(4), "lambda", 0.1, 0.5)
	f.Add(uint8(0), uint8(1), uint32(1<<31), math.Inf(1), math.NaN(), -1.0, 0.0, uint32(0), "", 0.0, 0.0)
	f.Add(uint8(1), uint8(0), uint32(2), 1.0, 1e-5, 1e-4, 1.0, uint32(4), "lambda", 0.1, 0.75)
	f.Add(uint8(1), uint8(0), uint32(2), 1e308, 1e-300, 1e-4, 1.0, uint32(1<<30), "\x00", 1e308, -1.0)
	h := newRPCHarness(f)
	f.Fuzz(func(t *testing.T, kind, scale uint8, n uint32, eps, delta, low, high float64, count uint32, name string, x, y float64) {
		space := []*curatorv1.HyperparameterRange{{Name: strings.ToValidUTF8(name, "?"), Scale: curatorv1.HyperparameterRange_Scale(scale % 6),
			Low: low, High: high, Count: count, Values: []float64{low, high}}}
		spec := &curatorv1.JobSpec{}
		if kind%2 == 0 {
			spec.Kind = &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{Algorithm: curatorv1.KusnerSpec_Algorithm(scale % 4), Space: space,
				Iterations: n, Epsilon: eps, Delta: delta, Lengthscale: x, K1: y, NoiseVariance: y}}
		} else {
			spec.Kind = &curatorv1.JobSpec_Dphypo{Dphypo: &curatorv1.DPHyPOSpec{Space: space, Theta: eps, Gamma: x, CMax: high, CMin: y,
				Tau: low, Beta: x, Delta: delta, TargetEpsilon: eps,
				Dpsgd: &curatorv1.DPSGDSettings{LearningRate: x, ClipNorm: y, NoiseMultiplier: high, Epochs: n % 4, BatchSize: count % 16}}}
		}
		ctx := transport.OutgoingIdentity(context.Background(), "acme")
		what := fmt.Sprintf("SubmitJob(%v)", spec)
		j, err := h.client.SubmitJob(ctx, &curatorv1.SubmitJobRequest{Spec: spec})
		h.check(t, what, err)
		if err == nil {
			_, err := h.client.CancelJob(ctx, &curatorv1.CancelJobRequest{Id: j.GetId()})
			h.check(t, "CancelJob of an accepted job", err)
		}
	})
}

// TestClientMistakes: the bad inputs a reliability test found answered INTERNAL, with a
// stack in the log — δ below 1e-100, a label that is not UTF-8, bytes that are no
// request — and their neighbours are answered INVALID_ARGUMENT with what to change,
// and logged below error level.
func TestClientMistakes(t *testing.T) {
	h := newRPCHarness(t)
	proj := rpcMethod{name: curatorv1.CuratorService_ReleaseProjection_FullMethodName, serverStreams: true}
	query := rpcMethod{name: curatorv1.CuratorService_Query_FullMethodName}
	submit := rpcMethod{name: curatorv1.CuratorService_SubmitJob_FullMethodName}
	for _, tc := range []struct {
		name string
		m    rpcMethod
		body []byte
		want string
	}{
		{"δ below 1e-100", proj, projectionRequest(2, 1, 1e-101, ""), "ask for a δ of at least 1e-100"},
		{"δ of the smallest float", proj, projectionRequest(2, 1, 5e-324, ""), "ask for a δ of at least 1e-100"},
		{"δ zero", proj, projectionRequest(2, 1, 0, ""), "delta must be in (0, 1)"},
		{"ε infinite", proj, projectionRequest(2, math.Inf(1), 1e-5, ""), "epsilon must be positive and finite"},
		{"ε NaN", proj, projectionRequest(2, math.NaN(), 1e-5, ""), "epsilon must be positive and finite"},
		{"noise that cannot be calibrated", proj, projectionRequest(2, 1e-12, 1e-100, ""), "ask for an ε nearer 1 or a larger δ"},
		{"label not UTF-8", proj, projectionRequest(2, 1, 1e-5, "caf\xe9"), "not a valid privbo.curator.v1.ReleaseProjectionRequest message"},
		{"label too long", proj, projectionRequest(2, 1, 1e-5, strings.Repeat("é", 33)), "label must be at most 64 bytes"},
		{"garbage", proj, []byte("garbage request bytes"), "not a valid privbo.curator.v1.ReleaseProjectionRequest message"},
		{"garbage query", query, []byte{0x0a, 0xff}, "not a valid privbo.curator.v1.QueryRequest message"},
		{"job with ε NaN", submit, marshalSeed(&curatorv1.SubmitJobRequest{Spec: &curatorv1.JobSpec{Kind: &curatorv1.JobSpec_Kusner{Kusner: &curatorv1.KusnerSpec{
			Algorithm: 1, Iterations: 3, Epsilon: math.NaN(), Delta: 1e-5,
			Space: []*curatorv1.HyperparameterRange{{Name: "lambda", Scale: curatorv1.HyperparameterRange_SCALE_LOG, Low: 1e-4, High: 1, Count: 4}}}}}}), "epsilon"},
		{"garbage job", submit, []byte{0x12, 0x05, 0x0a}, "not a valid privbo.curator.v1.SubmitJobRequest message"},
	} {
		err := h.callRaw(tc.m, "acme", tc.body)
		if st := status.Convert(err); st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tc.want) {
			t.Errorf("%s: %v, want InvalidArgument saying %q", tc.name, err, tc.want)
		}
		if entries := h.errLogs.TakeAll(); len(entries) > 0 {
			t.Errorf("%s: logged at error level: %q %v", tc.name, entries[0].Message, entries[0].ContextMap())
		}
	}
}
