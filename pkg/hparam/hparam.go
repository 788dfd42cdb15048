package hparam

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// MaxSize is the largest number of points a Space may have, and the largest
// number of values of one Param.
const MaxSize = 1_000_000

// Scale says how a Param's values are spaced, which decides its kernel
// coordinates (Space.Coords).
type Scale int

const (
	// Linear: values compared by their differences.
	Linear Scale = iota
	// Log: values compared by their ratios; every value must be positive.
	Log
)

// String returns "linear" or "log".
func (s Scale) String() string {
	switch s {
	case Linear:
		return "linear"
	case Log:
		return "log"
	}
	return fmt.Sprintf("Scale(%d)", int(s))
}

// Param is one named hyperparameter and its finite set of values. Values are
// finite, distinct and sorted ascending; under Log scale they are positive.
// Build Params with List, LogList, LinearRange, LogRange or ParseParam, which
// enforce this; NewSpace checks it again.
type Param struct {
	Name   string
	Values []float64
	Scale  Scale
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// List returns a linear-scale Param with the given values, sorted ascending.
// The values must be finite and distinct.
func List(name string, values ...float64) (Param, error) {
	return list(name, Linear, values)
}

// LogList returns a log-scale Param with the given values, sorted ascending.
// The values must be finite, positive and distinct.
func LogList(name string, values ...float64) (Param, error) {
	return list(name, Log, values)
}

func list(name string, scale Scale, values []float64) (Param, error) {
	p := Param{Name: name, Values: slices.Clone(values), Scale: scale}
	slices.Sort(p.Values) // NaNs sort first; validate reports them
	if err := p.validate(); err != nil {
		return Param{}, err
	}
	return p, nil
}

// LinearRange returns the linear-scale Param with n evenly spaced values
// lo + i(hi − lo)/(n − 1), i = 0 … n−1, with the endpoints exactly lo and hi.
// It needs finite lo < hi and 2 ≤ n ≤ MaxSize, or lo = hi and n = 1.
func LinearRange(name string, lo, hi float64, n int) (Param, error) {
	if err := checkRange(name, lo, hi, n); err != nil {
		return Param{}, err
	}
	v := make([]float64, n)
	for i := range v {
		t := float64(i) / float64(n-1)
		v[i] = lo*(1-t) + hi*t // no overflow of hi − lo
	}
	return rangeParam(name, Linear, v, lo, hi)
}

// LogRange returns the log-scale Param with n log-spaced values
// lo·(hi/lo)^(i/(n − 1)), i = 0 … n−1, with the endpoints exactly lo and hi.
// It needs finite 0 < lo < hi and 2 ≤ n ≤ MaxSize, or 0 < lo = hi and n = 1.
func LogRange(name string, lo, hi float64, n int) (Param, error) {
	if err := checkRange(name, lo, hi, n); err != nil {
		return Param{}, err
	}
	if !(lo > 0) {
		return Param{}, fmt.Errorf("hparam: parameter %q: log range needs lo > 0, got %g", name, lo)
	}
	v := make([]float64, n)
	a, b := math.Log(lo), math.Log(hi)
	for i := range v {
		t := float64(i) / float64(n-1)
		v[i] = math.Exp(a*(1-t) + b*t)
	}
	return rangeParam(name, Log, v, lo, hi)
}

func checkRange(name string, lo, hi float64, n int) error {
	if err := checkName(name); err != nil {
		return err
	}
	switch {
	case math.IsNaN(lo) || math.IsInf(lo, 0) || math.IsNaN(hi) || math.IsInf(hi, 0):
		return fmt.Errorf("hparam: parameter %q: range bounds must be finite, got [%g, %g]", name, lo, hi)
	case n < 1 || n > MaxSize:
		return fmt.Errorf("hparam: parameter %q: number of values must be in [1, %d], got %d", name, MaxSize, n)
	case n == 1 && lo != hi:
		return fmt.Errorf("hparam: parameter %q: a range of 1 value needs lo = hi, got [%g, %g]", name, lo, hi)
	case n > 1 && !(lo < hi):
		return fmt.Errorf("hparam: parameter %q: range needs lo < hi, got [%g, %g]", name, lo, hi)
	}
	return nil
}

func rangeParam(name string, scale Scale, v []float64, lo, hi float64) (Param, error) {
	if len(v) == 1 {
		v[0] = lo
	} else {
		v[0], v[len(v)-1] = lo, hi
	}
	p := Param{Name: name, Values: v, Scale: scale}
	if err := p.validate(); err != nil {
		return Param{}, fmt.Errorf("%w (range [%g, %g] too narrow for %d values in float64)", err, lo, hi, len(v))
	}
	return p, nil
}

func checkName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("hparam: parameter name %q must match %s", truncate(name), nameRE)
	}
	return nil
}

// Validate reports whether p is well formed: a valid name, 1 … MaxSize
// finite values sorted strictly ascending, positive under Log scale.
func (p Param) Validate() error { return p.validate() }

func (p Param) validate() error {
	if err := checkName(p.Name); err != nil {
		return err
	}
	if p.Scale != Linear && p.Scale != Log {
		return fmt.Errorf("hparam: parameter %q: unknown scale %d", p.Name, int(p.Scale))
	}
	if len(p.Values) == 0 || len(p.Values) > MaxSize {
		return fmt.Errorf("hparam: parameter %q: number of values must be in [1, %d], got %d", p.Name, MaxSize, len(p.Values))
	}
	for i, v := range p.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("hparam: parameter %q: value %d is %g, want a finite number", p.Name, i, v)
		}
		if p.Scale == Log && !(v > 0) {
			return fmt.Errorf("hparam: parameter %q: log-scale value %d is %g, want > 0", p.Name, i, v)
		}
		if i > 0 && !(p.Values[i-1] < v) {
			if p.Values[i-1] == v {
				return fmt.Errorf("hparam: parameter %q: duplicate value %g", p.Name, v)
			}
			return fmt.Errorf("hparam: parameter %q: values must be sorted ascending (%g before %g)", p.Name, p.Values[i-1], v)
		}
	}
	return nil
}

// String returns a spec that ParseParam reads back to an identical Param:
// "name=list:v1,v2,…" (linear) or "name=loglist:v1,v2,…" (log), with the
// shortest decimal form of each value.
func (p Param) String() string {
	var b strings.Builder
	b.WriteString(p.Name)
	if p.Scale == Log {
		b.WriteString("=loglist:")
	} else {
		b.WriteString("=list:")
	}
	for i, v := range p.Values {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	return b.String()
}

func parseNumber(s, what string) (float64, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("%s is empty", what)
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, fmt.Errorf("%s %q is out of the float64 range", what, truncate(s))
		}
		return 0, fmt.Errorf("%s %q is not a number", what, truncate(s))
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%s %q is not finite", what, truncate(s))
	}
	return v, nil
}

func specError(spec, msg string) error {
	// Errors from the constructors already start with "hparam: ".
	msg = strings.TrimPrefix(msg, "hparam: ")
	return fmt.Errorf("hparam: parameter spec %q: %s", truncate(spec), msg)
}

// truncate shortens s for an error message.
func truncate(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
