package transport

import (
	"context"
	"crypto/tls"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
)

// ClientConfig configures a connection to a curator.
type ClientConfig struct {
	// Identity is sent in every request's metadata (ignored by a curator that takes
	// identities from certificates).
	Identity string
	// TLS, when non-nil, dials with TLS; nil dials plaintext.
	TLS *tls.Config
	// MaxRecvMsgBytes bounds a response message; 0 means 8 MiB.
	MaxRecvMsgBytes int
	// Token, when set, is sent as "authorization: Bearer TOKEN" (TLS only).
	Token string
}

type bearer string

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}

func (bearer) RequireTransportSecurity() bool { return true }

// Dial opens a client connection to the curator at addr. The connection is lazy: the
// first RPC connects.
func Dial(addr string, cfg ClientConfig) (*grpc.ClientConn, error) {
	if cfg.Identity != "" {
		if err := ValidateIdentity(cfg.Identity); err != nil {
			return nil, err
		}
	}
	recv := cfg.MaxRecvMsgBytes
	if recv <= 0 {
		recv = 8 << 20
	}
	creds := insecure.NewCredentials()
	if cfg.TLS != nil {
		creds = credentials.NewTLS(cfg.TLS)
	}
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(recv)),
	}
	if cfg.Token != "" {
		if cfg.TLS == nil {
			return nil, fmt.Errorf("transport: a bearer token is only sent over TLS; give the curator's CA")
		}
		opts = append(opts, grpc.WithPerRPCCredentials(bearer(cfg.Token)))
	}
	id := cfg.Identity
	opts = append(opts,
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, o ...grpc.CallOption) error {
			if id != "" {
				ctx = OutgoingIdentity(ctx, id)
			}
			return Diagnose(inv(ctx, method, req, reply, cc, o...), addr, cfg)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, s grpc.Streamer, o ...grpc.CallOption) (grpc.ClientStream, error) {
			if id != "" {
				ctx = OutgoingIdentity(ctx, id)
			}
			cs, err := s(ctx, desc, cc, method, o...)
			return cs, Diagnose(err, addr, cfg)
		}),
	)
	conn, err := grpc.NewClient(addr, opts...)
	if err != nil {
		return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
	}
	return conn, nil
}
