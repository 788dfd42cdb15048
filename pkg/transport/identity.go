package transport

import (
	"context"
	"fmt"

	"google.golang.org/grpc/metadata"
)

// IdentityHeader is the request metadata key that names the caller until certificate
// identities are configured. The ledger charges every release to this identity.
const IdentityHeader = "privbo-identity"

// AnonymousIdentity is the identity of a caller that names none.
const AnonymousIdentity = "anonymous"

type identityKey struct{}

// ValidateIdentity checks that an identity is 1–128 characters of [A-Za-z0-9._@:-]
// that does not start with '_' (identities starting with '_' are the curator's own).
func ValidateIdentity(id string) error {
	if id == "" || len(id) > 128 {
		return fmt.Errorf("transport: identity must be 1 to 128 characters, got %d", len(id))
	}
	if id[0] == '_' {
		return fmt.Errorf("transport: identity must not start with '_'")
	}
	for _, c := range id {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '@', c == ':', c == '-':
		default:
			return fmt.Errorf("transport: identity may contain only letters, digits and . _ @ : - (got %q)", c)
		}
	}
	return nil
}

// WithIdentity returns a server-side context that carries the caller's identity.
func WithIdentity(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFromContext returns the identity established by the identity interceptor.
func IdentityFromContext(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(identityKey{}).(string)
	return id, ok
}

// OutgoingIdentity returns a client-side context that sends id in the request metadata.
func OutgoingIdentity(ctx context.Context, id string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, IdentityHeader, id)
}

// identityFromMetadata reads the identity a client named in its metadata.
func identityFromMetadata(ctx context.Context) (string, error) {
	vals := metadata.ValueFromIncomingContext(ctx, IdentityHeader)
	switch len(vals) {
	case 0:
		return AnonymousIdentity, nil
	case 1:
		return vals[0], ValidateIdentity(vals[0])
	default:
		return "", fmt.Errorf("transport: %d values for %s; send exactly one", len(vals), IdentityHeader)
	}
}
