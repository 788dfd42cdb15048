package refusal

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// TestReasonsAreTheProtoEnum: the reasons are the names of curator.proto's RefusalReason
// (but its UNSPECIFIED zero), the list every client is generated from; a reason added on
// one side only fails here.
func TestReasonsAreTheProtoEnum(t *testing.T) {
	var proto, goSide []string
	for name, v := range curatorv1.RefusalReason_value {
		if v != 0 {
			proto = append(proto, name)
		}
	}
	for _, r := range Reasons() {
		goSide = append(goSide, string(r))
	}
	slices.Sort(proto)
	slices.Sort(goSide)
	if !slices.Equal(goSide, proto) {
		t.Errorf("Reasons() = %v, curator.proto's RefusalReason = %v; want the same set", goSide, proto)
	}
}

// TestErrorIs checks that an Error matches the value of its own reason and no other,
// through wrapping, and that an unknown reason matches none.
func TestErrorIs(t *testing.T) {
	all := []error{ErrBudgetExceeded, ErrDeltaBudgetZero, ErrDimensionAboveFeatures, ErrExactRowLimit, ErrMemoryLimit, ErrUninformative, ErrLedgerUnavailable, ErrReleaseInProgress, ErrStoredBytes}
	if len(Reasons()) != len(all) || len(sentinels) != len(all) {
		t.Fatalf("%d reasons, %d values, want %d of each", len(Reasons()), len(sentinels), len(all))
	}
	for k, r := range Reasons() {
		err := fmt.Errorf("call: %w", &Error{Reason: r, Err: errors.New("status")})
		for j, s := range all {
			if got := errors.Is(err, s); got != (j == k) {
				t.Errorf("errors.Is(%s refusal, %q) = %v, want %v", r, s, got, j == k)
			}
		}
		var e *Error
		if !errors.As(err, &e) || e.Reason != r || err.Error() != "call: status" {
			t.Errorf("%s: errors.As = %v, text %q", r, e, err.Error())
		}
	}
	unknown := &Error{Reason: "NEW", Err: errors.New("status")}
	for _, s := range all {
		if errors.Is(unknown, s) {
			t.Errorf("an unknown reason matches %q", s)
		}
	}
}

func TestMetadata(t *testing.T) {
	e := &Error{Metadata: map[string]string{"a": "1.5", "b": "+Inf", "n": "12", "bad": "x"}}
	if v, ok := e.Float("a"); !ok || v != 1.5 {
		t.Errorf("Float(a) = %g, %v; want 1.5, true", v, ok)
	}
	if v, ok := e.Float("b"); !ok || v <= 1e308 {
		t.Errorf("Float(b) = %g, %v; want +Inf, true", v, ok)
	}
	if v, ok := e.Int("n"); !ok || v != 12 {
		t.Errorf("Int(n) = %d, %v; want 12, true", v, ok)
	}
	for _, k := range []string{"bad", "missing"} {
		if _, ok := e.Float(k); ok {
			t.Errorf("Float(%s) ok", k)
		}
		if _, ok := e.Int(k); ok {
			t.Errorf("Int(%s) ok", k)
		}
	}
	if _, ok := e.Int("a"); ok {
		t.Error("Int(1.5) ok")
	}
}
