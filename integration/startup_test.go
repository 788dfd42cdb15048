package integration

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestStartupNoticesOnce starts `curator serve` with settings that draw several
// notices (a coarse private scaling estimate, a warned-about answer noise, the
// whole-patient lines) and reads its standard error, which is no terminal: every line
// is one JSON event, no event's message appears twice or runs over 300 characters a
// line, and none names a Go field (Config.…) where the operator sets a flag.
func TestStartupNoticesOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := buildBinary(t, "./cmd/curator")
	cur := startCuratorBinary(t, bin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes",
		"--state", t.TempDir(), "--budget-epsilon", "10", "--patient-budget-epsilon", "500")
	text := cur.stderr.String()
	if strings.Contains(text, "Config.") {
		t.Errorf("start-up names a Go field (Config.…) instead of a flag:\n%s", text)
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		var ev struct{ Msg string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Msg == "" {
			t.Errorf("start-up line is not one JSON event with a message (%v): %s", err, line)
			continue
		}
		if seen[ev.Msg]++; seen[ev.Msg] == 2 {
			t.Errorf("start-up states %q twice", ev.Msg)
		}
		for _, l := range strings.Split(ev.Msg, "\n") {
			if n := len([]rune(l)); n > 300 {
				t.Errorf("start-up notice of %d characters, want at most 300: %s", n, l)
			}
		}
	}
	if len(seen) < 5 {
		t.Errorf("start-up logged %d events, want the notices (at least 5):\n%s", len(seen), text)
	}
}
