package setting

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Rule is the range of a setting's values: nil for a value in range, else why not.
type Rule[T any] func(T) error

// Why adds to r the way out a refusal should name ("leave it unset for the rate").
func (r Rule[T]) Why(hint string) Rule[T] {
	return func(v T) error {
		if err := r(v); err != nil {
			return fmt.Errorf("%w (%s)", err, hint)
		}
		return nil
	}
}

// Ranges of float settings.
var (
	// Positive: finite, > 0.
	Positive Rule[float64] = func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return errors.New("must be positive and finite")
		}
		return nil
	}
	// NonNegative: finite, ≥ 0 (for settings whose help documents what 0 means).
	NonNegative Rule[float64] = func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return errors.New("must be ≥ 0 and finite")
		}
		return nil
	}
	// Open01: in (0, 1) (a fraction, a δ that must be positive).
	Open01 Rule[float64] = func(v float64) error {
		if !(v > 0 && v < 1) {
			return errors.New("must lie in (0, 1)")
		}
		return nil
	}
	// ZeroTo1: in [0, 1) (a δ budget, where 0 is documented).
	ZeroTo1 Rule[float64] = func(v float64) error {
		if !(v >= 0 && v < 1) {
			return errors.New("must lie in [0, 1)")
		}
		return nil
	}
	// Finite: any finite number.
	Finite Rule[float64] = func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("must be finite")
		}
		return nil
	}
)

// AtLeast: an integer ≥ lo.
func AtLeast[T ~int | ~int64](lo T) Rule[T] {
	return func(v T) error {
		if v < lo {
			return fmt.Errorf("must be ≥ %d", lo)
		}
		return nil
	}
}

// DurationAtLeast: a duration ≥ lo; a refusal says why, as "must be at least 1s: why".
func DurationAtLeast(lo time.Duration, why string) Rule[time.Duration] {
	return func(v time.Duration) error {
		if v < lo {
			return fmt.Errorf("must be at least %v: %s", lo, why)
		}
		return nil
	}
}

// Ranges of durations: PositiveDuration > 0; NonNegativeDuration ≥ 0 (0 documented,
// such as "no limit").
var (
	PositiveDuration Rule[time.Duration] = func(v time.Duration) error {
		if v <= 0 {
			return errors.New("must be positive")
		}
		return nil
	}
	NonNegativeDuration Rule[time.Duration] = func(v time.Duration) error {
		if v < 0 {
			return errors.New("must be ≥ 0")
		}
		return nil
	}
)
