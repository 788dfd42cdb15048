package ledgertest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// RunLiveness runs, as subtests of t, how reservations clear when their holder
// is gone or its cancel failed: a reservation stops counting once its owner's
// heartbeat lapses (Ledger.Heartbeat), long before its time to live, and a
// refusal that counts it names the owner while its heartbeat is late; a
// reservation whose Cancel failed is cancelled by RetryCancels. Time is moved
// with Ledger.SetClock, never waited for.
func RunLiveness(t *testing.T, loc Location) {
	for name, fn := range map[string]func(*testing.T, Location){
		"OwnerLapses": testLivenessLapse, "BeatingOwnerHolds": testLivenessBeating, "CancelRetried": testCancelRetried,
	} {
		t.Run(name, func(t *testing.T) { fn(t, loc) })
	}
}

// livenessLimits allow ε 1 per identity and 10 for the dataset.
var livenessLimits = ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 1, Delta: 0.5}, Dataset: ledger.Cost{Epsilon: 10, Delta: 0.5}}

// at returns a clock that reads base+d.
func at(base time.Time, d time.Duration) func() time.Time {
	return func() time.Time { return base.Add(d) }
}

// testLivenessLapse: a replica ("pod-a") holds acme's whole budget and stops
// (a rescheduled pod: its name never returns). Another replica is refused while
// pod-a's heartbeat holds, told that the reservation is stale once the
// heartbeat is late, and can reserve once it lapsed, within the liveness window
// and not the reservation's time to live; the reservation is then removed. An
// owner that never beat keeps its reservation until its time to live.
// Refusals name only the stale holders of the refused identity's budget.
func testLivenessLapse(t *testing.T, loc Location) {
	open := loc(t)
	a, b := open(t, livenessLimits), open(t, livenessLimits)
	base := time.Now()
	a.SetClock(at(base, 0))
	const window = 20 * time.Second
	if err := a.Heartbeat(ctx, acme.Dataset, "pod-a", window); err != nil {
		t.Fatal(err)
	}
	held := MustReserve(t, a, ledger.Hold{Owner: "pod-a", TTL: ledger.DefaultReservationTTL}, projCharge(acme, "p1", 1))
	bob := ledger.Account{Dataset: acme.Dataset, Identity: "bob"}
	MustReserve(t, a, ledger.Hold{Owner: "legacy", TTL: ledger.DefaultReservationTTL}, projCharge(bob, "p1", 1))
	// pod-c, late longer than pod-a but holding another identity's budget, is not
	// named in acme's refusals.
	c := open(t, livenessLimits)
	c.SetClock(at(base, -time.Second))
	if err := c.Heartbeat(ctx, acme.Dataset, "pod-c", window); err != nil {
		t.Fatal(err)
	}
	MustReserve(t, c, ledger.Hold{Owner: "pod-c"}, projCharge(ledger.Account{Dataset: acme.Dataset, Identity: "carol"}, "p1", 1))

	for _, tc := range []struct {
		after time.Duration
		stale bool
	}{{window / 4, false}, {window * 3 / 5, true}} {
		b.SetClock(at(base, tc.after))
		_, err := b.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 0.5)}, ledger.Hold{Owner: "pod-b"})
		wantRefused(t, "while pod-a's heartbeat holds", err, ledger.ScopeIdentity, 1)
		var be *ledger.BudgetError
		if !errors.As(err, &be) {
			continue
		}
		if !tc.stale {
			if be.Stale != nil {
				t.Errorf("%v after pod-a's heartbeat: stale %+v, want none", tc.after, be.Stale)
			}
			continue
		}
		if be.Stale == nil || be.Stale.Owner != "pod-a" || !be.Stale.Seen.Equal(base.UTC()) || !be.Stale.Until.Equal(base.Add(window).UTC()) {
			t.Errorf("%v after pod-a's heartbeat: stale %+v, want pod-a seen at %v until %v", tc.after, be.Stale, base.UTC(), base.Add(window).UTC())
		}
		if msg := err.Error(); !strings.Contains(msg, `"pod-a" are stale`) || !strings.Contains(msg, "cleared at "+base.Add(window).UTC().Format(time.TimeOnly)) || !strings.Contains(msg, base.UTC().Format(time.TimeOnly)) {
			t.Errorf("the refusal does not say which reservation is stale since when: %s", msg)
		}
	}

	b.SetClock(at(base, window+time.Second))
	MustReserve(t, b, ledger.Hold{Owner: "pod-b"}, projCharge(acme, "p2", 1))
	if err := b.Heartbeat(ctx, acme.Dataset, "pod-b", window); err != nil {
		t.Fatal(err)
	}
	if err := a.Extend(ctx, held, 0); !errors.Is(err, ledger.ErrReservationLapsed) {
		t.Errorf("Extend of the lapsed owner's reservation: %v, want ErrReservationLapsed (removed)", err)
	}
	_, err := b.Reserve(ctx, []ledger.Charge{projCharge(bob, "p2", 0.5)}, ledger.Hold{Owner: "pod-b"})
	wantRefused(t, "beyond the reservation of an owner that never beat", err, ledger.ScopeIdentity, 1)
}

// testLivenessBeating: an owner that keeps beating keeps its reservation past
// its first window.
func testLivenessBeating(t *testing.T, loc Location) {
	open := loc(t)
	a, b := open(t, livenessLimits), open(t, livenessLimits)
	base := time.Now()
	const window = 20 * time.Second
	for _, d := range []time.Duration{0, window / 2} {
		a.SetClock(at(base, d))
		if err := a.Heartbeat(ctx, acme.Dataset, "pod-a", window); err != nil {
			t.Fatal(err)
		}
		if d == 0 {
			MustReserve(t, a, ledger.Hold{Owner: "pod-a"}, projCharge(acme, "p1", 1))
		}
	}
	b.SetClock(at(base, window+time.Second))
	_, err := b.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 0.5)}, ledger.Hold{Owner: "pod-b"})
	wantRefused(t, "while pod-a beats", err, ledger.ScopeIdentity, 1)
}

// testCancelRetried: a reservation whose Cancel failed holds its budget until
// RetryCancels cancels it; one that expired before the retry is forgotten; one
// that a Reserve without an answer may have written is cancelled too.
func testCancelRetried(t *testing.T, loc Location) {
	s := loc(t)(t, livenessLimits)
	base := time.Now()
	s.SetClock(at(base, 0))
	dead, cancel := context.WithCancel(ctx)
	cancel()
	r := MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p1", 1))
	if err := s.Cancel(dead, r); err == nil {
		t.Fatal("Cancel with a cancelled context succeeded; the test needs it to fail")
	}
	_, err := s.Reserve(ctx, []ledger.Charge{projCharge(acme, "p2", 1)}, ledger.Hold{Owner: "a"})
	wantRefused(t, "after the failed cancel", err, ledger.ScopeIdentity, 1)
	if n, err := s.RetryCancels(dead); n != 0 || err == nil {
		t.Errorf("RetryCancels while the ledger fails = %d, %v; want 0 and an error", n, err)
	}
	if n, err := s.RetryCancels(ctx); n != 1 || err != nil {
		t.Errorf("RetryCancels = %d, %v; want 1, nil", n, err)
	}
	r2 := MustReserve(t, s, ledger.Hold{Owner: "a", TTL: time.Minute}, projCharge(acme, "p2", 1))
	if n, err := s.RetryCancels(ctx); n != 0 || err != nil {
		t.Errorf("RetryCancels with nothing left to cancel = %d, %v; want 0, nil", n, err)
	}
	if err := s.Cancel(dead, r2); err == nil {
		t.Fatal("Cancel with a cancelled context succeeded")
	}
	s.SetClock(at(base, time.Minute+time.Second))
	if n, err := s.RetryCancels(dead); n != 0 || err != nil {
		t.Errorf("RetryCancels of an expired reservation = %d, %v; want it forgotten", n, err)
	}
	MustReserve(t, s, ledger.Hold{Owner: "a"}, projCharge(acme, "p3", 1))
	// A Reserve that failed without an answer may have written its reservation:
	// it is cancelled too.
	if _, err := s.Reserve(dead, []ledger.Charge{projCharge(acme, "p4", 0)}, ledger.Hold{Owner: "a"}); err == nil {
		t.Fatal("Reserve with a cancelled context succeeded")
	}
	if n, err := s.RetryCancels(ctx); n != 1 || err != nil {
		t.Errorf("RetryCancels after a Reserve that failed = %d, %v; want 1, nil", n, err)
	}
}
