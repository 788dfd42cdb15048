package transport

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
)

// Limits bounds what one identity may ask of the server. Zero values mean no limit.
type Limits struct {
	// Rate is the sustained requests per second of one identity; Burst how many may
	// come at once (default: max(1, Rate)).
	Rate  float64
	Burst int
	// Concurrent bounds one identity's requests in flight.
	Concurrent int
}

// limiter keeps a token bucket and an in-flight count per identity.
type limiter struct {
	cfg Limits
	mu  sync.Mutex
	ids map[string]*bucket
	now func() time.Time
}

type bucket struct {
	tokens   float64
	last     time.Time
	inFlight int
}

func newLimiter(cfg Limits) *limiter {
	if cfg.Rate > 0 && cfg.Burst <= 0 {
		cfg.Burst = max(1, int(math.Ceil(cfg.Rate)))
	}
	return &limiter{cfg: cfg, ids: map[string]*bucket{}, now: time.Now}
}

// acquire admits one request of id or returns a RESOURCE_EXHAUSTED status with a retry
// hint. The returned release must be called when the request ends.
func (l *limiter) acquire(id string) (release func(), err error) {
	if l.cfg.Rate <= 0 && l.cfg.Concurrent <= 0 {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.ids[id]
	now := l.now()
	if b == nil && len(l.ids) >= maxBuckets {
		l.evictIdle(now)
	}
	if b == nil {
		b = &bucket{tokens: float64(l.cfg.Burst), last: now}
		l.ids[id] = b
	}
	if l.cfg.Concurrent > 0 && b.inFlight >= l.cfg.Concurrent {
		return nil, retryStatus(fmt.Sprintf("identity %q already has %d requests in flight (the limit); retry when one finishes", id, b.inFlight), 100*time.Millisecond)
	}
	if l.cfg.Rate > 0 {
		b.tokens = min(float64(l.cfg.Burst), b.tokens+now.Sub(b.last).Seconds()*l.cfg.Rate)
		b.last = now
		if b.tokens < 1 {
			wait := time.Duration((1 - b.tokens) / l.cfg.Rate * float64(time.Second))
			return nil, retryStatus(fmt.Sprintf("identity %q is over its rate limit of %g requests per second; retry after %s", id, l.cfg.Rate, wait.Round(time.Millisecond)), wait)
		}
		b.tokens--
	}
	b.inFlight++
	return func() {
		l.mu.Lock()
		b.inFlight--
		l.mu.Unlock()
	}, nil
}

// maxBuckets bounds the limiter's memory: beyond it, buckets of identities with nothing
// in flight and a full bucket (idle long enough to have refilled) are dropped, which
// changes nothing for them.
const maxBuckets = 10000

func (l *limiter) evictIdle(now time.Time) {
	for id, b := range l.ids {
		refilled := l.cfg.Rate <= 0 || b.tokens+now.Sub(b.last).Seconds()*l.cfg.Rate >= float64(l.cfg.Burst)
		if b.inFlight == 0 && refilled {
			delete(l.ids, id)
		}
	}
}

func retryStatus(msg string, after time.Duration) error {
	st := status.New(codes.ResourceExhausted, msg)
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(after)}); err == nil {
		st = d
	}
	return st.Err()
}

func (l *limiter) identity(ctx context.Context) string {
	id, _ := IdentityFromContext(ctx)
	return id
}

func unaryLimit(l *limiter) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		release, err := l.acquire(l.identity(ctx))
		if err != nil {
			return nil, err
		}
		defer release()
		return h(ctx, req)
	}
}

func streamLimit(l *limiter) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		release, err := l.acquire(l.identity(ss.Context()))
		if err != nil {
			return err
		}
		defer release()
		return h(srv, ss)
	}
}
