package logging

import (
	"os"
	"testing"
)

// TestFormat: --log-format's default follows standard error (json when it is no
// terminal, as under go test), "console" is text's older name, and an unknown format is
// refused.
func TestFormat(t *testing.T) {
	want := "json"
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		want = "text"
	}
	for in, out := range map[string]string{"": want, "text": "text", "console": "text", "json": "json"} {
		if got, err := Format(in); err != nil || got != out {
			t.Errorf("Format(%q) = %q, %v; want %q", in, got, err, out)
		}
	}
	if _, err := Format("xml"); err == nil {
		t.Error("Format(\"xml\") accepted an unknown format")
	}
	if _, err := New("info", "text"); err != nil {
		t.Errorf("New(info, text): %v", err)
	}
}
