package transport

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// ServerConfig configures the gRPC server options.
type ServerConfig struct {
	// Logger receives one line per RPC (method, identity, request id, code, duration).
	Logger *zap.Logger
	// TLS, when non-nil, serves TLS with this configuration; nil serves plaintext.
	TLS *tls.Config
	// MaxRecvMsgBytes bounds a request message; 0 means 1 MiB.
	MaxRecvMsgBytes int
	// MaxSendMsgBytes bounds a response message; 0 means 4 MiB.
	MaxSendMsgBytes int
	// Auth says how callers are identified.
	Auth Auth
	// Limits bounds each identity's request rate and concurrency.
	Limits Limits
	// AuthFailures throttles each peer's failed authentications and samples their
	// log lines; nil: one with the default AuthFailureLimits, whose summaries are
	// logged only when the peer fails again (call Flush to log them on time).
	AuthFailures *AuthFailures
	// MaxHeaderListBytes bounds the headers (metadata) of a request, which the
	// server reads before authenticating it; 0 means DefaultMaxHeaderListBytes.
	// A request with larger headers is reset without being read further.
	MaxHeaderListBytes int
	// Unary and Stream, when set, are the outermost interceptors, so that they see
	// every request with the status its caller gets: refused ones and recovered panics
	// too (the server's gRPC metrics).
	Unary  grpc.UnaryServerInterceptor
	Stream grpc.StreamServerInterceptor
}

// DefaultMaxHeaderListBytes is the default bound on a request's headers. privbo's
// clients send a few hundred bytes (a bearer token included); 16 KiB leaves room for
// long tokens and proxies' additions, and is a thousandth of grpc-go's default of
// 16 MiB, with which an unauthenticated peer makes the server hold 16 MiB per request
// (grpc-go's coming default is 8 KiB).
const DefaultMaxHeaderListBytes = 16 << 10

// requestInfo is what the interceptors learn about a request, shared by pointer so the
// outer logging interceptor sees the identity the inner one established.
type requestInfo struct {
	id       string
	identity string
	// peer is set when the request failed authentication or was refused before it;
	// quiet when its line is left out of the log (AuthFailures' sampling).
	peer  string
	quiet bool
}

type requestInfoKey struct{}

// RequestIDFromContext returns the id the logging interceptor gave this request.
func RequestIDFromContext(ctx context.Context) string {
	if ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		return ri.id
	}
	return ""
}

// ServerOptions builds the options of the curator's grpc.Server: credentials, message
// and header size limits, keepalive enforcement, a codec that leaves malformed requests
// to the interceptors (see decode.go) and the chained interceptors, outermost first:
// cfg.Unary/cfg.Stream when set (which must call the handler they are given), panic
// recovery, request id and logging (every request, refused ones too, except the
// failed authentications AuthFailures leaves out), the per-peer throttle of failed
// authentications and authentication itself (the identity the ledger charges),
// per-identity rate and concurrency limits, and last the refusal of malformed requests.
func ServerOptions(cfg ServerConfig) []grpc.ServerOption {
	log := cmp.Or(cfg.Logger, zap.NewNop())
	recv, send := cfg.MaxRecvMsgBytes, cfg.MaxSendMsgBytes
	if recv <= 0 {
		recv = 1 << 20
	}
	if send <= 0 {
		send = 4 << 20
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	limiter := newLimiter(cfg.Limits)
	failures := cfg.AuthFailures
	if failures == nil {
		failures = NewAuthFailures(AuthFailureLimits{}, log)
	}
	headers := cfg.MaxHeaderListBytes
	if headers <= 0 {
		headers = DefaultMaxHeaderListBytes
	}
	var unary []grpc.UnaryServerInterceptor
	if cfg.Unary != nil {
		unary = append(unary, cfg.Unary)
	}
	var stream []grpc.StreamServerInterceptor
	if cfg.Stream != nil {
		stream = append(stream, cfg.Stream)
	}
	return []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.ForceServerCodecV2(newServerCodec()),
		grpc.MaxRecvMsgSize(recv),
		grpc.MaxSendMsgSize(send),
		grpc.MaxHeaderListSize(uint32(min(headers, math.MaxUint32))),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// A fixed pool of stream workers keeps its grown goroutine stacks; without it
		// every RPC starts a fresh goroutine whose stack is grown and copied again
		// (~9% of CPU samples on the cached-query path; docs/EXPERIMENTS.md §4).
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		grpc.ChainUnaryInterceptor(append(unary, unaryTakeUndecoded, unaryRecover(log), unaryLog(log), unaryAuth(cfg.Auth, failures), unaryLimit(limiter), unaryRefuseUndecoded)...),
		grpc.ChainStreamInterceptor(append(stream, streamRefuseUndecoded, streamRecover(log), streamLog(log), streamAuth(cfg.Auth, failures), streamLimit(limiter))...),
	}
}

// Request ids are a per-process random prefix and a counter: unique, cheap, and free of
// a system call per request.
var (
	requestPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return hex.EncodeToString(b[:])
	}()
	requestCounter atomic.Uint64
)

func newRequestID() string {
	return requestPrefix + "-" + strconv.FormatUint(requestCounter.Add(1), 36)
}

// authenticate establishes the caller's identity and records it for the log. A peer
// that has failed too often is refused before its credentials are read (AuthFailures).
func authenticate(ctx context.Context, auth Auth, failures *AuthFailures) (context.Context, error) {
	ri, _ := ctx.Value(requestInfoKey{}).(*requestInfo)
	if ri == nil {
		ri = &requestInfo{}
	}
	key := peerKey(ctx)
	if ok, wait, logIt := failures.admit(key); !ok {
		ri.peer, ri.quiet = key, !logIt
		return ctx, retryStatus(fmt.Sprintf("too many failed authentications from %s; fix the client's credentials (its certificate, bearer token or identity) and retry after %s",
			key, wait.Round(time.Millisecond)), wait)
	}
	id, err := auth.identify(ctx)
	if err != nil {
		ri.peer, ri.quiet = key, !failures.failed(key)
		return ctx, status.Error(codes.Unauthenticated, err.Error())
	}
	ri.identity = id
	return WithIdentity(ctx, id), nil
}

func unaryAuth(auth Auth, failures *AuthFailures) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := authenticate(ctx, auth, failures)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

func streamAuth(auth Auth, failures *AuthFailures) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := authenticate(ss.Context(), auth, failures)
		if err != nil {
			return err
		}
		return h(srv, wrappedStream{ss, ctx})
	}
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w wrappedStream) Context() context.Context { return w.ctx }

func withRequestInfo(ctx context.Context) (context.Context, *requestInfo) {
	ri := &requestInfo{id: newRequestID()}
	return context.WithValue(ctx, requestInfoKey{}, ri), ri
}

func unaryLog(log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		ctx, ri := withRequestInfo(ctx)
		resp, err := h(ctx, req)
		logRPC(log, ri, info.FullMethod, start, err)
		return resp, err
	}
}

func streamLog(log *zap.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		ctx, ri := withRequestInfo(ss.Context())
		err := h(srv, wrappedStream{ss, ctx})
		logRPC(log, ri, info.FullMethod, start, err)
		return err
	}
}

// logRPC writes one line per RPC. It never includes request or response messages:
// they may carry data.
func logRPC(log *zap.Logger, ri *requestInfo, method string, start time.Time, err error) {
	if ri.quiet || !log.Core().Enabled(zap.InfoLevel) {
		return
	}
	d := time.Since(start)
	code := status.Code(err)
	fields := []zap.Field{
		zap.String("method", method),
		zap.String("identity", ri.identity),
		zap.String("request_id", ri.id),
		zap.String("code", code.String()),
		zap.Duration("duration", d),
	}
	if err != nil {
		fields = append(fields, zap.String("error", status.Convert(err).Message()))
	}
	if ri.peer != "" {
		fields = append(fields, zap.String("peer", ri.peer))
	}
	switch code {
	case codes.OK, codes.Canceled:
		log.Info("rpc", fields...)
	case codes.Internal, codes.Unknown, codes.DataLoss:
		log.Error("rpc", fields...)
	default:
		log.Warn("rpc", fields...)
	}
}

// A panic must never take down the curator or reach the client as a stack: it is logged
// (stack only, no request) and answered as Internal.
func recovered(log *zap.Logger, method string, p any) error {
	log.Error("panic in handler", zap.String("method", method), zap.String("panic", fmt.Sprint(p)), zap.ByteString("stack", debug.Stack()))
	return status.Error(codes.Internal, "internal error; the curator's operator can find details in its log")
}

func unaryRecover(log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (resp any, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = recovered(log, info.FullMethod, p)
			}
		}()
		return h(ctx, req)
	}
}

func streamRecover(log *zap.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = recovered(log, info.FullMethod, p)
			}
		}()
		return h(srv, ss)
	}
}
