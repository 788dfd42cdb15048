package evaluator

import (
	"math"
	"strings"
	"testing"
)

func TestTailBuffer(t *testing.T) {
	tests := []struct {
		writes []string
		max    int
		want   string
	}{
		{[]string{"abc", "defg"}, 5, "cdefg"},
		{[]string{"abc"}, 5, "abc"},
		{[]string{"abcdefgh"}, 5, "defgh"},
		{[]string{"ab", "cd", "ef", "g"}, 3, "efg"},
		{[]string{"abcde", ""}, 5, "abcde"},
	}
	for _, tt := range tests {
		b := &tailBuffer{max: tt.max}
		for _, w := range tt.writes {
			if n, err := b.Write([]byte(w)); n != len(w) || err != nil {
				t.Errorf("Write(%q) = %d, %v, want %d, nil", w, n, err, len(w))
			}
		}
		if got := b.String(); got != tt.want {
			t.Errorf("tailBuffer(max %d) after %q = %q, want %q", tt.max, tt.writes, got, tt.want)
		}
	}
}

func TestHeadBuffer(t *testing.T) {
	b := &headBuffer{max: 5}
	for _, w := range []string{"ab", "cde"} {
		b.Write([]byte(w))
	}
	if b.overflow || string(b.Bytes()) != "abcde" {
		t.Errorf("headBuffer = %q, overflow %v, want %q, false", b.Bytes(), b.overflow, "abcde")
	}
	if n, err := b.Write([]byte("f")); n != 1 || err != nil || !b.overflow || string(b.Bytes()) != "abcde" {
		t.Errorf("headBuffer past max: Write = %d, %v; %q overflow %v, want 1, nil; %q true", n, err, b.Bytes(), b.overflow, "abcde")
	}
}

// FuzzParseScore: parseScore never panics, and a score it accepts is finite
// and came from a JSON number.
func FuzzParseScore(f *testing.F) {
	for _, s := range []string{`{"score": 0.9}`, `1`, `NaN`, `{"score": "x"}`, `[1]`, `1 2`, `{"score":1e999}`, ``, `{"score": -0}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		x, err := parseScore([]byte(out))
		if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
			t.Errorf("parseScore(%q) = %g, want a finite score", out, x)
		}
		if err == nil && !strings.ContainsAny(out, "0123456789") {
			t.Errorf("parseScore(%q) = %g without a digit in the output", out, x)
		}
	})
}
