package privacy

import (
	"math"
	"strings"
	"testing"
)

func TestCostValidate(t *testing.T) {
	tests := []struct {
		c       Cost
		wantErr string // "" for valid
	}{
		{Cost{Epsilon: 0, Delta: 0}, ""},
		{Cost{Epsilon: 1, Delta: 1e-5}, ""},
		{Cost{Epsilon: math.Copysign(0, -1), Delta: 0}, ""},
		{Cost{Epsilon: 1e300, Delta: 0.999999}, ""},
		{Cost{Epsilon: math.NaN(), Delta: 0}, "epsilon must be finite"},
		{Cost{Epsilon: math.Inf(1), Delta: 0}, "epsilon must be finite"},
		{Cost{Epsilon: -1, Delta: 0}, "epsilon must be non-negative"},
		{Cost{Epsilon: -math.SmallestNonzeroFloat64, Delta: 0}, "epsilon must be non-negative"},
		{Cost{Epsilon: 1, Delta: math.NaN()}, "delta must be finite"},
		{Cost{Epsilon: 1, Delta: math.Inf(-1)}, "delta must be finite"},
		{Cost{Epsilon: 1, Delta: -1e-9}, "delta must be non-negative"},
		{Cost{Epsilon: 1, Delta: 1}, "delta must be below 1"},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("%+v.Validate() = %v, want error containing %q", tt.c, err, tt.wantErr)
		}
	}
}
