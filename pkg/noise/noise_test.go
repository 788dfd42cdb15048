package noise

import (
	"encoding/json"
	"testing"
)

// TestNames: every stated family goes to its name and back, through JSON as study files
// store it; Unstated is not among them, and an unknown name is an error.
func TestNames(t *testing.T) {
	want := []string{"none", "laplace", "gaussian"}
	fs := Families()
	if len(fs) != len(want) {
		t.Fatalf("Families() = %v, want %v", fs, want)
	}
	for i, f := range fs {
		b, err := json.Marshal(f)
		var back Family
		if err != nil || string(b) != `"`+want[i]+`"` || json.Unmarshal(b, &back) != nil || back != f || f.String() != want[i] {
			t.Errorf("%v: JSON %s, %v; back %v; want %q", f, b, err, back, want[i])
		}
	}
	if f, err := Parse("staircase"); err == nil || f != Unstated {
		t.Errorf(`Parse("staircase") = %v, %v; want an error`, f, err)
	}
	if _, err := Family(len(names)).MarshalText(); err == nil {
		t.Errorf("MarshalText of %v: no error", Family(len(names)))
	}
}
