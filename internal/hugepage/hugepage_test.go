package hugepage

import "testing"

// TestFloats checks that the slices are zeroed, of the asked length and usable
// end to end, below and above the size that gets the hint.
func TestFloats(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 3 << 20} {
		s := Floats(n)
		if len(s) != n {
			t.Fatalf("Floats(%d) has length %d", n, len(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Floats(%d)[%d] = %v, want 0", n, i, v)
			}
		}
		for i := range s {
			s[i] = float64(i)
		}
		if n > 0 && s[n-1] != float64(n-1) {
			t.Fatalf("Floats(%d): the last value did not stick", n)
		}
	}
}
