package pgledger

import "testing"

// TestOptionsSchema checks the schema an Options names, the default included. The
// engine's behaviour is tested with the conformance suite in package ledgertest.
func TestOptionsSchema(t *testing.T) {
	for _, tt := range []struct{ in, want string }{{"", DefaultSchema}, {"ledger_2", "ledger_2"}, {"_x", "_x"}} {
		if got, err := (Options{Schema: tt.in}).schema(); err != nil || got != tt.want {
			t.Errorf("Options{Schema: %q}.schema() = %q, %v, want %q", tt.in, got, err, tt.want)
		}
	}
}
