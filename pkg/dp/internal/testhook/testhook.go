// Package testhook lets package dptest build a deterministic *dp.Source
// without package dp exporting a constructor that takes an arbitrary reader.
//
// It is internal: only packages under pkg/dp can import it.
package testhook

import "io"

// NewSource is set by package dp at initialisation to a function that wraps r
// in a *dp.Source (returned as any to avoid an import cycle).
var NewSource func(r io.Reader) any
