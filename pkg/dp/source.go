package dp

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
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
// A Source buffers its random bytes and is safe for concurrent use (one
// mutex; concurrent workers should each have their own Source).
type Source struct {
	mu sync.Mutex
	r  io.Reader // the stream of a test source; nil for CryptoSource

	// CryptoSource: AES-256-CTR keystream under a key from crypto/rand,
	// replaced by a fresh key every rekeyBytes bytes.
	crypto bool
	stream cipher.Stream
	left   int // keystream bytes left under the current key

	buf   []byte
	pos   int    // next unread byte of buf
	word  uint64 // unused random bits, low bits first
	nbits uint   // number of valid bits in word

	dg *dgParams // the discrete Gaussian parameters used last (DiscreteGaussian)
}

const (
	// readerChunk is the read size of test sources: a scripted stream is
	// consumed 64 bytes at a time, so a stream shorter than that fails at once.
	readerChunk = 64
	// cryptoChunk is the keystream generated at a time by CryptoSource.
	cryptoChunk = 4096
	// rekeyBytes is the keystream one crypto/rand key may produce (1 MiB,
	// about 8000 discrete Gaussian draws).
	rekeyBytes = 1 << 20
)

// CryptoSource returns a Source for releases: a cryptographically secure
// generator seeded from the operating system (crypto/rand). It reads a fresh
// 256-bit key from crypto/rand, expands it with AES-256 in counter mode (the
// construction of NIST SP 800-90A's CTR_DRBG, without its derivation
// function), and replaces the key with a new one from crypto/rand after every
// MiB of output. One crypto/rand read thus serves thousands of samples, and
// an attacker who cannot break AES learns nothing about the output beyond
// what truly random bits would reveal. The key is read at the first draw.
func CryptoSource() *Source {
	return &Source{crypto: true, buf: make([]byte, cryptoChunk), pos: cryptoChunk}
}

func newSource(r io.Reader) *Source {
	return &Source{r: r, buf: make([]byte, readerChunk), pos: readerChunk}
}

var errNilSource = errors.New("dp: nil Source (use CryptoSource)")

func (s *Source) check() error {
	if s == nil || (s.r == nil && !s.crypto) {
		return errNilSource
	}
	return nil
}

// refill replaces the buffer with the next bytes of the stream. Callers
// hold s.mu.
func (s *Source) refill() error {
	if !s.crypto {
		if _, err := io.ReadFull(s.r, s.buf); err != nil {
			return fmt.Errorf("dp: reading randomness: %w", err)
		}
		s.pos = 0
		return nil
	}
	if s.stream == nil || s.left < len(s.buf) {
		var key [32]byte
		if _, err := io.ReadFull(rand.Reader, key[:]); err != nil {
			return fmt.Errorf("dp: reading randomness: %w", err)
		}
		block, err := aes.NewCipher(key[:])
		clear(key[:])
		if err != nil {
			return fmt.Errorf("dp: keying the generator: %w", err)
		}
		// A fresh key for every stream, so the all-zero counter block is safe.
		s.stream = cipher.NewCTR(block, make([]byte, aes.BlockSize))
		s.left = rekeyBytes
	}
	clear(s.buf)
	s.stream.XORKeyStream(s.buf, s.buf)
	s.left -= len(s.buf)
	s.pos = 0
	return nil
}

// fill reads the next bytes of the stream into p. Callers hold s.mu.
func (s *Source) fill(p []byte) error {
	for len(p) > 0 {
		if s.pos == len(s.buf) {
			if err := s.refill(); err != nil {
				return err
			}
		}
		n := copy(p, s.buf[s.pos:])
		s.pos += n
		p = p[n:]
	}
	return nil
}

// bitsLocked returns n ∈ [0, 64] uniform random bits. Callers hold s.mu.
func (s *Source) bitsLocked(n uint) (uint64, error) {
	if s.nbits >= n && n < 64 {
		v := s.word & (1<<n - 1)
		s.word >>= n
		s.nbits -= n
		return v, nil
	}
	return s.bitsSlow(n)
}

// bitsSlow is bitsLocked when the buffered bits do not suffice or n = 64.
//
//go:noinline
func (s *Source) bitsSlow(n uint) (uint64, error) {
	if s.nbits >= n { // n = 64
		v := s.word
		s.word, s.nbits = 0, 0
		return v, nil
	}
	// Take what is left, then refill the word with 64 fresh bits.
	have, low := s.nbits, s.word
	w, err := s.nextWord()
	if err != nil {
		return 0, err
	}
	s.word = w
	s.nbits = 64
	need := n - have
	hi, err := s.bitsLocked(need)
	if err != nil {
		return 0, err
	}
	return low | hi<<have, nil
}

// nextWord returns the next 8 bytes of the stream as a little-endian word
// (64 uniform bits, independent of the bits held in s.word). Callers hold
// s.mu.
func (s *Source) nextWord() (uint64, error) {
	if p := s.pos; p <= len(s.buf)-8 {
		s.pos = p + 8
		return binary.LittleEndian.Uint64(s.buf[p : p+8]), nil
	}
	return s.nextWordSlow()
}

func (s *Source) nextWordSlow() (uint64, error) {
	var b [8]byte
	if err := s.fill(b[:]); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), nil
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

// uniform128Locked returns an integer uniform on [0, a) for 1 ≤ a < 2¹²⁸ by
// rejection on k = bitlen(a − 1) bits, drawn as bitsLocked(min(k, 64)) for
// the low word and then bitsLocked(k − 64) for the high word: the same draws
// as uniformBigLocked, so both give the same value from the same stream.
func (s *Source) uniform128Locked(a u128) (u128, error) {
	k := a.sub(u64(1)).bitLen()
	for {
		var v u128
		var err error
		if k <= 64 {
			v.lo, err = s.bitsLocked(uint(k))
		} else {
			if v.lo, err = s.bitsLocked(64); err == nil {
				v.hi, err = s.bitsLocked(uint(k - 64))
			}
		}
		if err != nil {
			return u128{}, err
		}
		if v.less(a) {
			return v, nil
		}
	}
}

// uniformBigLocked sets z to an integer uniform on [0, a), a ≥ 1, by
// rejection on k = bitlen(a − 1) bits drawn in 64-bit chunks, least
// significant first (see uniform128Locked).
func (s *Source) uniformBigLocked(z, a *big.Int) (*big.Int, error) {
	k := new(big.Int).Sub(a, bigOne).BitLen()
	chunk := new(big.Int)
	for {
		z.SetUint64(0)
		for off := 0; off < k || off == 0; off += 64 {
			v, err := s.bitsLocked(uint(min(64, k-off)))
			if err != nil {
				return nil, err
			}
			z.Or(z, chunk.SetUint64(v).Lsh(chunk, uint(off)))
		}
		if z.Cmp(a) < 0 {
			return z, nil
		}
	}
}

var bigOne = big.NewInt(1)
