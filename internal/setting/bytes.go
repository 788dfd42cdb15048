package setting

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Bytes declares a size in bytes, written as a number with an optional unit: B, KiB,
// MiB, GiB, TiB (powers of 1024) or kB, MB, GB, TB (powers of 1000), for instance 2GiB,
// 1.5GiB, 800MB or 2147483648 — the units of Kubernetes' and Go's memory limits
// (GOMEMLIMIT). It prints with the largest binary unit that divides it; 0 as 0.
func Bytes(p *int64, name string, r Rule[int64], help string) Setting {
	return Var(p, (*bytesValue)(p), name, r, help)
}

type bytesValue int64

var byteUnits = []struct {
	suffix string
	scale  float64
}{
	// Longest suffixes first, so that "MiB" is not read as "B".
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseBytes reads a size as Bytes writes it.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	for _, u := range byteUnits {
		if rest, ok := strings.CutSuffix(t, u.suffix); ok {
			t, scale = strings.TrimSpace(rest), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a size: want a number of bytes with an optional unit (B, KiB, MiB, GiB, TiB, kB, MB, GB, TB), such as 2GiB", s)
	}
	b := v * scale
	if b >= math.MaxInt64 || b <= math.MinInt64 {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return int64(math.Round(b)), nil
}

func (b *bytesValue) Set(s string) error {
	v, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = bytesValue(v)
	return nil
}

func (b *bytesValue) String() string {
	if b == nil {
		return "0"
	}
	v := int64(*b)
	for _, u := range []struct {
		suffix string
		scale  int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if v != 0 && v%u.scale == 0 {
			return strconv.FormatInt(v/u.scale, 10) + u.suffix
		}
	}
	return strconv.FormatInt(v, 10)
}

// BytesAtLeast: a size of at least lo bytes.
func BytesAtLeast(lo int64) Rule[int64] {
	return func(v int64) error {
		if v < lo {
			return errors.New("must be at least " + (*bytesValue)(&lo).String())
		}
		return nil
	}
}
