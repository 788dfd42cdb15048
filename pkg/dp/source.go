package dp

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/big"
	"math/bits"
	"sync"

	"github.com/privbo/privbo/pkg/dp/internal/testhook"
)

func init() {
	testhook.NewSource = func(r io.Reader) any { return newSource(r) }
}

// Source is the only randomness the samplers and mechanisms of this package
// use. Build one with CryptoSource; tests build deterministic ones with package
// dptest (which refuses to run outside a test binary). There is no exported
// way to wrap an arbitrary io.Reader, so a seeded generator cannot reach a
// release path by accident.
//
// A Source buffers bytes from its reader and is safe for concurrent use.
type Source struct {
	mu    sync.Mutex
	r     io.Reader
	buf   [64]byte
	pos   int    // next unread byte of buf
	word  uint64 // unused random bits, low bits first
	nbits uint   // number of valid bits in word
}

// CryptoSource returns a Source reading the operating system's
// cryptographically secure generator (crypto/rand). Use it for every release.
func CryptoSource() *Source { return newSource(rand.Reader) }

func newSource(r io.Reader) *Source {
	s := &Source{r: r}
	s.pos = len(s.buf)
	return s
}

var errNilSource = errors.New("dp: nil Source (use CryptoSource)")

func (s *Source) check() error {
	if s == nil || s.r == nil {
		return errNilSource
	}
	return nil
}

// fill reads the next bytes of the stream into p. Callers hold s.mu.
func (s *Source) fill(p []byte) error {
	for len(p) > 0 {
		if s.pos == len(s.buf) {
			if _, err := io.ReadFull(s.r, s.buf[:]); err != nil {
				return fmt.Errorf("dp: reading randomness: %w", err)
			}
			s.pos = 0
		}
		n := copy(p, s.buf[s.pos:])
		s.pos += n
		p = p[n:]
	}
	return nil
}

// bitsLocked returns n ∈ [0, 64] uniform random bits. Callers hold s.mu.
func (s *Source) bitsLocked(n uint) (uint64, error) {
	if n == 0 {
		return 0, nil
	}
	if s.nbits >= n {
		v := s.word
		if n < 64 {
			v &= 1<<n - 1
			s.word >>= n
		} else {
			s.word = 0
		}
		s.nbits -= n
		return v, nil
	}
	// Take what is left, then refill the word with 64 fresh bits.
	have, low := s.nbits, s.word
	var b [8]byte
	if err := s.fill(b[:]); err != nil {
		return 0, err
	}
	s.word = uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
	s.nbits = 64
	need := n - have
	hi, err := s.bitsLocked(need)
	if err != nil {
		return 0, err
	}
	return low | hi<<have, nil
}

// Bit returns one uniform random bit.
func (s *Source) Bit() (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, err := s.bitsLocked(1)
	return v == 1, err
}

// Uint64n returns an integer uniform on [0, n) for n ≥ 1, by rejection
// sampling: draw ⌈log₂ n⌉ bits and retry while the value is ≥ n (no modulo
// bias; each attempt succeeds with probability > ½).
func (s *Source) Uint64n(n uint64) (uint64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, errors.New("dp: Uint64n needs n ≥ 1, got 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uint64nLocked(n)
}

func (s *Source) uint64nLocked(n uint64) (uint64, error) {
	k := uint(bits.Len64(n - 1))
	for {
		v, err := s.bitsLocked(k)
		if err != nil {
			return 0, err
		}
		if v < n {
			return v, nil
		}
	}
}

// BigIntn returns an integer uniform on [0, n) for n ≥ 1, by rejection
// sampling on n.BitLen() random bits.
func (s *Source) BigIntn(n *big.Int) (*big.Int, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if n == nil || n.Sign() <= 0 {
		return nil, fmt.Errorf("dp: BigIntn needs n ≥ 1, got %v", n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bigIntnLocked(new(big.Int), n)
}

// bigIntnLocked sets z to a uniform integer in [0, n) and returns it.
func (s *Source) bigIntnLocked(z, n *big.Int) (*big.Int, error) {
	if n.IsUint64() {
		v, err := s.uint64nLocked(n.Uint64())
		if err != nil {
			return nil, err
		}
		return z.SetUint64(v), nil
	}
	nm1 := new(big.Int).Sub(n, bigOne)
	k := nm1.BitLen()
	nbytes := (k + 7) / 8
	b := make([]byte, nbytes)
	top := byte(0xff >> (8*nbytes - k))
	for {
		if err := s.fill(b); err != nil {
			return nil, err
		}
		b[0] &= top
		z.SetBytes(b)
		if z.Cmp(n) < 0 {
			return z, nil
		}
	}
}

var bigOne = big.NewInt(1)
