package curatorclient

import (
	"errors"
	"fmt"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/refusal"
)

// TestRefused checks that a status carrying the curator's ErrorInfo becomes a
// *refusal.Error with its reason and metadata (also when wrapped), keeping the status
// readable, and that other errors pass unchanged.
func TestRefused(t *testing.T) {
	withInfo := func(domain, reason string) error {
		st, err := status.New(codes.ResourceExhausted, "over budget").WithDetails(&errdetails.ErrorInfo{Domain: domain, Reason: reason,
			Metadata: map[string]string{refusal.KeyLimit: "7"}})
		if err != nil {
			t.Fatal(err)
		}
		return st.Err()
	}
	for _, tc := range []struct {
		name   string
		err    error
		reason refusal.Reason // "" for unchanged
	}{
		{"budget", withInfo(refusal.Domain, string(refusal.BudgetExceeded)), refusal.BudgetExceeded},
		{"wrapped", fmt.Errorf("curatorclient: projection: %w", withInfo(refusal.Domain, string(refusal.ExactRowLimit))), refusal.ExactRowLimit},
		{"other domain", withInfo("example.com", string(refusal.BudgetExceeded)), ""},
		{"no details", status.Error(codes.ResourceExhausted, "rate"), ""},
		{"not a status", errors.New("plain"), ""},
	} {
		got := Refused(tc.err)
		var re *refusal.Error
		if tc.reason == "" {
			if got != tc.err || errors.As(got, &re) {
				t.Errorf("%s: Refused = %v, want the error unchanged", tc.name, got)
			}
			continue
		}
		if !errors.As(got, &re) || re.Reason != tc.reason || re.Metadata[refusal.KeyLimit] != "7" || status.Code(got) != codes.ResourceExhausted ||
			got.Error() != tc.err.Error() {
			t.Errorf("%s: Refused = %#v, want reason %s, limit 7, code kept, text unchanged", tc.name, got, tc.reason)
		}
	}
	if Refused(nil) != nil {
		t.Error("Refused(nil) != nil")
	}
}
