package dp

import (
	"fmt"
	"math"
)

// ValidateEpsilon reports whether ε is a usable privacy parameter: positive
// and finite.
func ValidateEpsilon(epsilon float64) error {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return fmt.Errorf("dp: epsilon must be positive and finite, got %g", epsilon)
	}
	return nil
}

// ValidateDelta reports whether δ is a usable privacy parameter: finite with
// 0 ≤ δ < 1.
func ValidateDelta(delta float64) error {
	if !(delta >= 0 && delta < 1) {
		return fmt.Errorf("dp: delta must be in [0, 1), got %g", delta)
	}
	return nil
}

// ValidateSensitivity reports whether a sensitivity is usable: positive and
// finite.
func ValidateSensitivity(sensitivity float64) error {
	if !(sensitivity > 0) || math.IsInf(sensitivity, 0) {
		return fmt.Errorf("dp: sensitivity must be positive and finite, got %g", sensitivity)
	}
	return nil
}

// validateFinite reports whether x is finite; name says what x is.
func validateFinite(name string, x float64) error {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("dp: %s must be finite, got %g", name, x)
	}
	return nil
}
