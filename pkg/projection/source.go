package projection

import (
	cryptorand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"sync"
)

// Source is the Gaussian generator that draws the projection matrix M. Only
// SecureSource and SeededSource construct a usable Source; the zero value is
// rejected by Project. A Source is safe for concurrent use; successive draws
// advance its state, so two Project calls with the same Source use different M.
type Source struct {
	s *source
}

type source struct {
	mu     sync.Mutex
	rng    *rand.Rand
	seeded bool
	fixed  []float64 // FixedSource's matrix, returned by every draw
}

// SecureSource returns a generator for production releases: a ChaCha8 stream
// (math/rand/v2) keyed with 32 bytes from crypto/rand. The key is never exposed,
// logged or stored outside the generator's state.
func SecureSource() Source {
	var key [32]byte
	if _, err := cryptorand.Read(key[:]); err != nil {
		// crypto/rand.Read does not return errors since Go 1.24; a failure
		// here means the platform has no secure randomness at all.
		panic("projection: crypto/rand failed: " + err.Error())
	}
	src := Source{&source{rng: rand.New(rand.NewChaCha8(key))}}
	clear(key[:])
	return src
}

// SeededSource returns a deterministic generator for simulations, benchmarks
// and tests only: anyone who knows seed can reconstruct M, so whatever
// protection Project's release has relies on M staying secret and is lost.
// (ProjectGaussian's guarantee does not need M to be secret.)
func SeededSource(seed uint64) Source {
	var key [32]byte
	copy(key[:24], "privbo/projection/seeded")
	binary.LittleEndian.PutUint64(key[24:], seed)
	return Source{&source{rng: rand.New(rand.NewChaCha8(key)), seeded: true}}
}

// FixedSource returns a source whose every draw is the row-major d×r matrix m
// (copied), for privacy audits only: ProjectGaussian's guarantee holds for every
// M, so an audit may fix M to the worst case for the change it tests (aligned
// with the change). It reports itself as seeded, so the curator refuses it for
// real releases. A draw of another size panics.
func FixedSource(m []float64) Source {
	return Source{&source{fixed: append([]float64(nil), m...), seeded: true}}
}

// fixedMatrix reports whether the source is a FixedSource, whose matrix is used
// as given.
func (s Source) fixedMatrix() bool { return s.s != nil && s.s.fixed != nil }

// Seeded reports whether the source came from SeededSource. The curator can
// refuse such sources for real releases.
func (s Source) Seeded() bool { return s.s != nil && s.s.seeded }

// String names the kind of source ("secure", "seeded" or "invalid"); it never
// reveals a seed.
func (s Source) String() string {
	switch {
	case s.s == nil:
		return "invalid"
	case s.s.seeded:
		return "seeded"
	default:
		return "secure"
	}
}

// normals fills dst with i.i.d. N(0, 1) draws.
func (s Source) normals(dst []float64) {
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	if s.s.fixed != nil {
		if len(dst) != len(s.s.fixed) {
			panic("projection: FixedSource asked for a matrix of another size")
		}
		copy(dst, s.s.fixed)
		return
	}
	for i := range dst {
		dst[i] = s.s.rng.NormFloat64()
	}
}
