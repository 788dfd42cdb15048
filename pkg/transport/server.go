package transport

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
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
	// Unary and Stream, when set, are the outermost interceptors, so that they see
	// every request with the status its caller gets: refused ones and recovered panics
	// too (the server's gRPC metrics).
	Unary  grpc.UnaryServerInterceptor
	Stream grpc.StreamServerInterceptor
}

// requestInfo is what the interceptors learn about a request, shared by pointer so the
// outer logging interceptor sees the identity the inner one established.
type requestInfo struct {
	id       string
	identity string
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
// size limits, keepalive enforcement and the chained interceptors, outermost first:
// cfg.Unary/cfg.Stream when set, panic recovery, request id and logging (every request,
// refused ones too), authentication (the identity the ledger charges), per-identity
// rate and concurrency limits.
func ServerOptions(cfg ServerConfig) []grpc.ServerOption {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
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
		grpc.MaxRecvMsgSize(recv),
		grpc.MaxSendMsgSize(send),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// A fixed pool of stream workers keeps its grown goroutine stacks; without it
		// every RPC starts a fresh goroutine whose stack is grown and copied again
		// (~9% of CPU samples on the cached-query path; docs/EXPERIMENTS.md §4).
		grpc.NumStreamWorkers(uint32(runtime.GOMAXPROCS(0))),
		grpc.ChainUnaryInterceptor(append(unary, unaryRecover(log), unaryLog(log), unaryAuth(cfg.Auth), unaryLimit(limiter))...),
		grpc.ChainStreamInterceptor(append(stream, streamRecover(log), streamLog(log), streamAuth(cfg.Auth), streamLimit(limiter))...),
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

// authenticate establishes the caller's identity and records it for the log.
func authenticate(ctx context.Context, auth Auth) (context.Context, error) {
	id, err := auth.identify(ctx)
	if err != nil {
		return ctx, status.Error(codes.Unauthenticated, err.Error())
	}
	if ri, ok := ctx.Value(requestInfoKey{}).(*requestInfo); ok {
		ri.identity = id
	}
	return WithIdentity(ctx, id), nil
}

func unaryAuth(auth Auth) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		ctx, err := authenticate(ctx, auth)
		if err != nil {
			return nil, err
		}
		return h(ctx, req)
	}
}

func streamAuth(auth Auth) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		ctx, err := authenticate(ss.Context(), auth)
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
	if !log.Core().Enabled(zap.InfoLevel) {
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
