// Package dptest builds deterministic randomness sources for tests of code
// that uses package dp.
//
// A *dp.Source normally comes from dp.CryptoSource. Tests need reproducible
// streams, so this package wraps a seeded ChaCha8 generator (or any reader)
// in a *dp.Source through an internal hook: package dp itself exports no
// constructor taking an arbitrary io.Reader. Every function here panics when
// it is not called from a test binary (testing.Testing), so a seeded source
// cannot reach a release path: importing dptest from production code fails
// at the first call.
package dptest

import (
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/internal/testhook"
)

// Source returns a deterministic *dp.Source: the ChaCha8 stream
// (math/rand/v2) keyed by seed. Equal seeds give equal streams.
func Source(seed uint64) *dp.Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	return FromReader(rand.NewChaCha8(key))
}

// FromReader returns a *dp.Source reading r, for tests that script the exact
// random bytes (or make the reader fail).
func FromReader(r io.Reader) *dp.Source {
	if !testing.Testing() {
		panic("dptest: deterministic randomness used outside a test binary")
	}
	return testhook.NewSource(r).(*dp.Source)
}
