package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/testlog"
)

// rawCodec sends a message's bytes as they are (*[]byte).
type rawCodec struct{}

func (rawCodec) Marshal(v any) (mem.BufferSlice, error) {
	return mem.BufferSlice{mem.SliceBuffer(*v.(*[]byte))}, nil
}

func (rawCodec) Unmarshal(data mem.BufferSlice, v any) error {
	*v.(*[]byte) = data.Materialize()
	return nil
}

func (rawCodec) Name() string { return "proto" }

func undecodedLen() int {
	n := 0
	undecoded.Range(func(any, any) bool { n++; return true })
	return n
}

// TestMalformedRequests: bytes that are not a valid request — malformed wire data, a
// string that is not UTF-8 — are answered INVALID_ARGUMENT naming the message type,
// logged as a client's mistake (not at error level), after authentication (an
// unauthenticated peer gets UNAUTHENTICATED); nothing is kept once they are answered.
// Streams too (health's Watch).
func TestMalformedRequests(t *testing.T) {
	log, buf := testlog.New()
	token := "right-token-0123"
	conn := serveHealth(t, ServerConfig{Logger: log, Auth: Auth{Tokens: map[string]string{HashToken(token): "acme"}}})
	authed := metadata.AppendToOutgoingContext(context.Background(), "authorization", "Bearer "+token)
	for _, tc := range []struct {
		name string
		ctx  context.Context
		body []byte
		want codes.Code
	}{
		{"valid", authed, nil, codes.OK},
		{"garbage", authed, []byte("garbage request bytes"), codes.InvalidArgument},
		{"invalid UTF-8", authed, []byte("\x0a\x02\xff\xfe"), codes.InvalidArgument},
		{"garbage, unauthenticated", context.Background(), []byte{0xff, 0xff}, codes.Unauthenticated},
	} {
		body := tc.body
		var out []byte
		err := conn.Invoke(tc.ctx, healthpb.Health_Check_FullMethodName, &body, &out, grpc.ForceCodecV2(rawCodec{}))
		if status.Code(err) != tc.want {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
		if tc.want == codes.InvalidArgument && !strings.Contains(status.Convert(err).Message(), "not a valid grpc.health.v1.HealthCheckRequest message") {
			t.Errorf("%s: message %q does not name the request type", tc.name, status.Convert(err).Message())
		}
	}
	ctx, cancel := context.WithCancel(authed)
	defer cancel()
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, healthpb.Health_Watch_FullMethodName, grpc.ForceCodecV2(rawCodec{}))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("\x0a\x01\xc3")
	if err := st.SendMsg(&body); err != nil {
		t.Fatal(err)
	}
	st.CloseSend()
	var out []byte
	if err := st.RecvMsg(&out); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Watch with invalid UTF-8: %v, want InvalidArgument", err)
	}
	if n := undecodedLen(); n != 0 {
		t.Errorf("%d decoding errors kept after their requests were answered", n)
	}
	logs := buf.String()
	if strings.Contains(logs, `"level":"error"`) || strings.Contains(logs, "stack") {
		t.Errorf("a client's mistake was logged as an error:\n%s", logs)
	}
	if n := strings.Count(logs, `"code":"InvalidArgument"`); n != 3 {
		t.Errorf("%d InvalidArgument lines, want 3:\n%s", n, logs)
	}
}

// TestPanicStillRecovered: a panicking handler is answered INTERNAL and logged at
// error level with its stack: the path client mistakes must not reach still works.
func TestPanicStillRecovered(t *testing.T) {
	log, buf := testlog.New()
	srv := grpc.NewServer(ServerOptions(ServerConfig{Logger: log})...)
	healthpb.RegisterHealthServer(srv, panicHealth{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := Dial(lis.Addr().String(), ClientConfig{Identity: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = healthpb.NewHealthClient(conn).Check(context.Background(), &healthpb.HealthCheckRequest{})
	if status.Code(err) != codes.Internal || strings.Contains(status.Convert(err).Message(), "boom") {
		t.Errorf("panicking handler = %v, want Internal without the panic's text", err)
	}
	if logs := buf.String(); !strings.Contains(logs, `"msg":"panic in handler"`) || !strings.Contains(logs, `"stack"`) || !strings.Contains(logs, "boom") {
		t.Errorf("the panic was not logged with its stack:\n%s", logs)
	}
}

type panicHealth struct {
	healthpb.UnimplementedHealthServer
}

func (panicHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	panic("boom")
}

// offerHeaders sends one request whose headers hold n fields of size bytes each to the
// server at addr over raw HTTP/2 (a gRPC client would refuse to send them), and returns
// what the server answered — "reset" (RST_STREAM), "closed" (GOAWAY or the connection
// closed) or "answered" (response headers) — and the bytes the process allocated
// meanwhile (the encoded request is built before).
func offerHeaders(t *testing.T, addr string, n, size int) (string, uint64) {
	t.Helper()
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", healthpb.Health_Check_FullMethodName},
		{":authority", "curator"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	value := strings.Repeat("x", size)
	for i := range n {
		// Sensitive: never indexed, so every field is sent in full.
		enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-pad-%d", i), Value: value, Sensitive: true})
	}
	var frames bytes.Buffer
	fr := http2.NewFramer(&frames, nil)
	frames.WriteString(http2.ClientPreface)
	fr.WriteSettings()
	b := block.Bytes()
	const chunk = 16 << 10
	first := b[:min(chunk, len(b))]
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndStream: true, EndHeaders: len(b) <= chunk})
	for off := chunk; off < len(b); off += chunk {
		end := min(off+chunk, len(b))
		fr.WriteContinuation(1, end == len(b), b[off:end])
	}
	wire := frames.Bytes()

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	go func() { conn.Write(wire) }() // fails once the server closes the connection
	rd := http2.NewFramer(io.Discard, conn)
	outcome := "closed"
read:
	for {
		f, err := rd.ReadFrame()
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !strings.Contains(err.Error(), "connection reset") {
				t.Logf("reading the server's frames: %v", err)
			}
			break
		}
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			outcome = "reset"
			break read
		case *http2.GoAwayFrame:
			break read
		case *http2.HeadersFrame:
			if f.StreamID == 1 {
				outcome = "answered"
				break read
			}
		}
	}
	runtime.ReadMemStats(&after)
	return outcome, after.TotalAlloc - before.TotalAlloc
}

// TestHeaderListLimit: a request whose headers exceed MaxHeaderListBytes is reset
// before anything reads it, and the server does not hold what it was offered (16 MiB
// here: it allocates less than 2 MiB, where a server allowing them allocates more than
// 16 MiB); headers within the limit are served.
func TestHeaderListLimit(t *testing.T) {
	serve := func(limit int) string {
		log, _ := testlog.New()
		srv := grpc.NewServer(ServerOptions(ServerConfig{Logger: log, MaxHeaderListBytes: limit})...)
		healthpb.RegisterHealthServer(srv, health.NewServer())
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go srv.Serve(lis)
		t.Cleanup(srv.Stop)
		return lis.Addr().String()
	}
	limited := serve(0) // DefaultMaxHeaderListBytes
	if got, _ := offerHeaders(t, limited, 2, 1024); got != "answered" {
		t.Errorf("2 KiB of headers: %s, want answered", got)
	}
	got, alloc := offerHeaders(t, limited, 2048, 8<<10)
	if got != "reset" && got != "closed" {
		t.Errorf("16 MiB of headers: %s, want the stream reset or the connection closed", got)
	}
	t.Logf("limited: %s after %d bytes", got, alloc)
	if alloc > 2<<20 {
		t.Errorf("16 MiB of headers refused after allocating %d bytes, want < 2 MiB", alloc)
	}
	// The control: without the limit the same request is read into memory.
	got, alloc = offerHeaders(t, serve(64<<20), 2048, 8<<10)
	t.Logf("unlimited: %s after %d bytes", got, alloc)
	if got != "answered" || alloc < 16<<20 {
		t.Errorf("16 MiB of headers to a server allowing 64 MiB: %s after allocating %d bytes, want answered after more than 16 MiB", got, alloc)
	}
}
