package transport

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"runtime/debug"
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
}

type requestIDKey struct{}

// RequestIDFromContext returns the id the logging interceptor gave this request.
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// ServerOptions builds the options of the curator's grpc.Server: credentials, message
// size limits, keepalive enforcement and the chained interceptors, outermost first:
// panic recovery, request id and identity, logging.
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
	return []grpc.ServerOption{
		grpc.Creds(creds),
		grpc.MaxRecvMsgSize(recv),
		grpc.MaxSendMsgSize(send),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		grpc.ChainUnaryInterceptor(
			unaryRecover(log),
			unaryContext,
			unaryLog(log),
		),
		grpc.ChainStreamInterceptor(
			streamRecover(log),
			streamContext,
			streamLog(log),
		),
	}
}

func newRequestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requestContext attaches a request id and the caller's identity to ctx.
func requestContext(ctx context.Context) (context.Context, error) {
	ctx = context.WithValue(ctx, requestIDKey{}, newRequestID())
	id, err := identityFromMetadata(ctx)
	if err != nil {
		return ctx, status.Error(codes.Unauthenticated, err.Error())
	}
	return WithIdentity(ctx, id), nil
}

func unaryContext(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := requestContext(ctx)
	if err != nil {
		return nil, err
	}
	return h(ctx, req)
}

type wrappedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (w wrappedStream) Context() context.Context { return w.ctx }

func streamContext(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := requestContext(ss.Context())
	if err != nil {
		return err
	}
	return h(srv, wrappedStream{ss, ctx})
}

// logFields never includes request or response messages: they may carry data.
func logFields(ctx context.Context, method string, start time.Time, err error) []zap.Field {
	id, _ := IdentityFromContext(ctx)
	return []zap.Field{
		zap.String("method", method),
		zap.String("identity", id),
		zap.String("request_id", RequestIDFromContext(ctx)),
		zap.String("code", status.Code(err).String()),
		zap.Duration("duration", time.Since(start)),
	}
}

func unaryLog(log *zap.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		start := time.Now()
		resp, err := h(ctx, req)
		logRPC(log, ctx, info.FullMethod, start, err)
		return resp, err
	}
}

func streamLog(log *zap.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		start := time.Now()
		err := h(srv, ss)
		logRPC(log, ss.Context(), info.FullMethod, start, err)
		return err
	}
}

func logRPC(log *zap.Logger, ctx context.Context, method string, start time.Time, err error) {
	fields := logFields(ctx, method, start, err)
	if err != nil {
		fields = append(fields, zap.String("error", status.Convert(err).Message()))
	}
	switch status.Code(err) {
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
