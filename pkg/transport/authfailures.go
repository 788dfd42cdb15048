package transport

import (
	"cmp"
	"container/list"
	"context"
	"math"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc/peer"
)

// AuthFailureLimits bounds what one peer may cost the server by failing to
// authenticate: how often it may fail (a token bucket per peer, spent only by
// failures) and how much of the log its failures take. A peer is a remote IPv4
// address, or an IPv6 /64 (one host commonly holds a whole /64): source ports are
// free to vary, addresses are not. Zero values take the defaults below.
type AuthFailureLimits struct {
	// Rate is the sustained rate of failed authentications per second one peer may
	// cause, Burst how many it may cause at once. A peer that has used them up has
	// its requests refused with RESOURCE_EXHAUSTED and a retry hint before its
	// credentials are read, until the bucket refills; requests that authenticate
	// spend nothing. A negative Rate turns the throttle off (the log stays sampled).
	// Default DefaultAuthFailureRate and DefaultAuthFailureBurst.
	Rate  float64
	Burst int
	// Logged is how many failed or refused requests of one peer are logged, a line
	// each, per LogInterval; beyond them the peer's failures are counted and
	// reported in one summary line when the interval ends. Default
	// DefaultAuthFailuresLogged per DefaultAuthFailureLogInterval.
	Logged      int
	LogInterval time.Duration
	// MaxPeers bounds the table of peers with recent failures; beyond it the peer
	// that failed least recently is forgotten (its summary logged first). Default
	// DefaultAuthFailurePeers.
	MaxPeers int
}

// Defaults of AuthFailureLimits. A client with a wrong token or certificate finds
// out at its first failure; ten in a row and one per second after that leave room
// for retries and for clients sharing an address, and slow a search for a token to
// a crawl. The table holds about 200 bytes per peer.
const (
	DefaultAuthFailureRate        = 1.0
	DefaultAuthFailureBurst       = 10
	DefaultAuthFailuresLogged     = 5
	DefaultAuthFailureLogInterval = time.Minute
	DefaultAuthFailurePeers       = 10000
)

// WithDefaults returns l with its zero fields set to the defaults.
func (l AuthFailureLimits) WithDefaults() AuthFailureLimits {
	l.Rate = cmp.Or(l.Rate, DefaultAuthFailureRate)
	l.Burst = cmp.Or(l.Burst, DefaultAuthFailureBurst)
	l.Logged = cmp.Or(l.Logged, DefaultAuthFailuresLogged)
	l.LogInterval = cmp.Or(l.LogInterval, DefaultAuthFailureLogInterval)
	l.MaxPeers = cmp.Or(l.MaxPeers, DefaultAuthFailurePeers)
	return l
}

// AuthFailures throttles and samples failed authentications per peer
// (AuthFailureLimits). It is safe for concurrent use.
type AuthFailures struct {
	lim AuthFailureLimits
	log *zap.Logger
	now func() time.Time

	mu    sync.Mutex
	peers map[string]*list.Element // of *peerFailures, most recent failure at the front
	lru   *list.List
}

// peerFailures is what AuthFailures keeps of one peer.
type peerFailures struct {
	key string
	// tokens is the peer's failure bucket, as of last.
	tokens float64
	last   time.Time
	// window is the start of the current log interval; logged lines were written in
	// it, failed and refused requests were counted without a line.
	window          time.Time
	logged          int
	failed, refused int
}

// NewAuthFailures returns the throttle and log sampler of lim (defaults filled in),
// logging to log. lim's fields must not be negative, except Rate, nor NaN or infinite.
func NewAuthFailures(lim AuthFailureLimits, log *zap.Logger) *AuthFailures {
	log = cmp.Or(log, zap.NewNop())
	return &AuthFailures{lim: lim.WithDefaults(), log: log, now: time.Now, peers: map[string]*list.Element{}, lru: list.New()}
}

// admit reports whether a request of peer key may try to authenticate. When it may
// not, wait is when one more failure will be allowed, and logIt whether to log the
// refusal.
func (a *AuthFailures) admit(key string) (ok bool, wait time.Duration, logIt bool) {
	if a.lim.Rate < 0 {
		return true, 0, false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, found := a.peers[key]
	if !found {
		return true, 0, false
	}
	p := e.Value.(*peerFailures)
	now := a.now()
	a.refill(p, now)
	if p.tokens >= 1 {
		return true, 0, false
	}
	a.lru.MoveToFront(e)
	wait = time.Duration(math.Ceil((1 - p.tokens) / a.lim.Rate * float64(time.Second)))
	return false, wait, a.sample(p, now, true)
}

// failed records a failed authentication of peer key and reports whether to log it.
func (a *AuthFailures) failed(key string) (logIt bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	var p *peerFailures
	if e, found := a.peers[key]; found {
		p = e.Value.(*peerFailures)
		a.lru.MoveToFront(e)
		a.refill(p, now)
	} else {
		if a.lru.Len() >= a.lim.MaxPeers {
			a.forget(a.lru.Back(), now)
		}
		p = &peerFailures{key: key, tokens: float64(a.lim.Burst), last: now, window: now}
		a.peers[key] = a.lru.PushFront(p)
	}
	if a.lim.Rate >= 0 {
		p.tokens = max(0, p.tokens-1)
	}
	return a.sample(p, now, false)
}

func (a *AuthFailures) refill(p *peerFailures, now time.Time) {
	if a.lim.Rate > 0 && now.After(p.last) {
		p.tokens = min(float64(a.lim.Burst), p.tokens+now.Sub(p.last).Seconds()*a.lim.Rate)
	}
	if now.After(p.last) {
		p.last = now
	}
}

// sample counts one failed (or refused) request of p and reports whether it is among
// the first Logged of the current interval, starting a new interval (and summarising
// the last one) when it has ended.
func (a *AuthFailures) sample(p *peerFailures, now time.Time, refused bool) bool {
	if now.Sub(p.window) >= a.lim.LogInterval {
		a.summarise(p, now)
		p.window, p.logged = now, 0
	}
	if p.logged < a.lim.Logged {
		p.logged++
		return true
	}
	if refused {
		p.refused++
	} else {
		p.failed++
	}
	return false
}

// summarise logs how many of p's requests went unlogged in its current interval.
func (a *AuthFailures) summarise(p *peerFailures, now time.Time) {
	if p.failed+p.refused == 0 {
		return
	}
	a.log.Warn("failed authentications not logged one by one",
		zap.String("peer", p.key), zap.Int("failed", p.failed), zap.Int("refused", p.refused),
		zap.Time("since", p.window), zap.Duration("over", now.Sub(p.window)))
	p.failed, p.refused = 0, 0
}

// forget drops a peer from the table, summarising what it has not logged.
func (a *AuthFailures) forget(e *list.Element, now time.Time) {
	p := e.Value.(*peerFailures)
	a.summarise(p, now)
	a.lru.Remove(e)
	delete(a.peers, p.key)
}

// Flush logs the summaries of the intervals that have ended and forgets peers whose
// bucket has refilled and who have nothing left to report, so that an attack that
// stops is still summarised. A server calls it periodically (package server does,
// every few seconds).
func (a *AuthFailures) Flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now()
	for e := a.lru.Back(); e != nil; {
		prev := e.Prev()
		p := e.Value.(*peerFailures)
		if now.Sub(p.window) >= a.lim.LogInterval {
			a.summarise(p, now)
			p.window, p.logged = now, 0
			a.refill(p, now)
			if a.lim.Rate < 0 || p.tokens >= float64(a.lim.Burst) {
				a.lru.Remove(e)
				delete(a.peers, p.key)
			}
		}
		e = prev
	}
}

// peerKey is the peer of a request as AuthFailures counts it: the IPv4 address, or
// the /64 of an IPv6 address; for other transports the address as the listener
// names it.
func peerKey(ctx context.Context) string {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return "unknown"
	}
	var ip net.IP
	switch addr := p.Addr.(type) {
	case *net.TCPAddr:
		ip = addr.IP
	default:
		host, _, err := net.SplitHostPort(addr.String())
		if err != nil {
			return addr.String()
		}
		if ip = net.ParseIP(host); ip == nil {
			return host
		}
	}
	if v4 := ip.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: ip.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}
