package figure

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestFigure pins the text of figures: at most four significant digits, the nearest
// (or, for FigureUp, never below the value), and no float noise.
func TestText(t *testing.T) {
	tenth := 0.1 // a variable: 0.1 + 0.2 in float64, not the constant 0.3
	for _, tc := range []struct {
		x        float64
		near, up string
	}{
		{math.Exp(2), "7.389", "7.39"},
		{0.0008 - 1e-19, "0.0008", "0.0008"},
		{tenth + 0.2, "0.3", "0.3"},
		{0.30004, "0.3", "0.3001"},
		{1e-7, "1e-07", "1e-07"},
		{4310.4, "4310", "4311"},
		{108.66, "108.7", "108.7"},
		{2.0 * 10 / 11, "1.818", "1.819"},
		{1, "1", "1"},
		{math.Inf(1), "∞", "∞"},
		{0, "0", "0"},
	} {
		if got := Text(tc.x); got != tc.near {
			t.Errorf("Text(%v) = %s, want %s", tc.x, got, tc.near)
		}
		if got := Up(tc.x); got != tc.up {
			t.Errorf("Up(%v) = %s, want %s", tc.x, got, tc.up)
		}
		if v, err := strconv.ParseFloat(Up(tc.x), 64); err == nil && v < tc.x*(1-1e-9) {
			t.Errorf("Up(%v) = %v, below the value", tc.x, v)
		}
		mant, _, _ := strings.Cut(strings.TrimLeft(Text(tc.x), "0."), "e")
		if n := len(strings.TrimLeft(strings.ReplaceAll(mant, ".", ""), "0")); n > Digits {
			t.Errorf("Text(%v) = %s has %d significant digits, want at most %d", tc.x, Text(tc.x), n, Digits)
		}
	}
}
