package study

import (
	"context"
	"errors"
	"math"
	"testing"
)

// TestAnswerNoise checks that the answers' noise is what the curator stated and nothing
// else: exact answers none, a stated sd and family as they are, and a record without a
// statement ErrNoiseUnstated, whatever its mechanism is called (this package calibrates
// no mechanism; see pkg/study/calibrate).
func TestAnswerNoise(t *testing.T) {
	if an, err := (OutputPrivacy{Mechanism: "laplace", Exact: true}).AnswerNoise(); err != nil || an != (AnswerNoise{}) {
		t.Errorf("exact answers: noise %+v, %v; want none", an, err)
	}
	an, err := OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, Lower: 0, Upper: 1, NoiseSD: 3, Laplace: true}.AnswerNoise()
	if err != nil || an != (AnswerNoise{SD: 3, Variance: 9, Laplace: true}) {
		t.Errorf("stated noise = %+v, %v; want sd 3, variance 9, Laplace", an, err)
	}
	for _, o := range []OutputPrivacy{
		{}, {Mechanism: "none"}, {Mechanism: "laplace", EpsilonPerIndex: 2, Lower: 0, Upper: 400},
		{Mechanism: "laplace", NoiseSD: -1}, {Mechanism: "laplace", NoiseSD: math.NaN()},
	} {
		if !o.Unstated() {
			t.Errorf("%+v: Unstated false", o)
		}
		if _, err := o.AnswerNoise(); !errors.Is(err, ErrNoiseUnstated) {
			t.Errorf("AnswerNoise(%+v) = %v; want ErrNoiseUnstated", o, err)
		}
	}
	if _, err := (OutputPrivacy{Mechanism: "laplace", NoiseSD: math.Inf(1)}).AnswerNoise(); err == nil {
		t.Error("an infinite stated noise sd: no error")
	}
}

// TestNoiseStatementOnGet checks WithNoiseStatement: a release stored without the
// curator's statement (testRelease, as a study file from before it) is stated by the
// option's function when it is read, and the stored record is left as it was; a store
// without the option returns it unstated, and a stated release never reaches the
// function.
func TestNoiseStatementOnGet(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	calls := 0
	state := func(op *OutputPrivacy) error {
		calls++
		op.NoiseSD, op.Laplace = 56.5, true
		return nil
	}
	s, err := Open(dir, WithNoiseStatement(state))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stated := testRelease
	stated.OutputPrivacy.NoiseSD = 7
	for name, rel := range map[string]Release{"old": testRelease, "new": stated} {
		if _, err := s.Create(ctx, name, testConn, testSettings); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveRelease(ctx, name, rel, testZ); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if an, err := st.Release.OutputPrivacy.AnswerNoise(); err != nil || an.SD != 56.5 || !an.Laplace || calls != 1 {
		t.Errorf("old release through the statement: noise %+v, %v after %d calls; want sd 56.5, Laplace, 1 call", an, err, calls)
	}
	if st, err = s.Get(ctx, "new"); err != nil || st.Release.OutputPrivacy.NoiseSD != 7 || calls != 1 {
		t.Errorf("stated release: %v, noise sd %v after %d calls; want 7, untouched", err, st.Release.OutputPrivacy.NoiseSD, calls)
	}
	plain, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	st, err = plain.Get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Release.OutputPrivacy.AnswerNoise(); !errors.Is(err, ErrNoiseUnstated) {
		t.Errorf("old release without the option: %v; want ErrNoiseUnstated (the record stays as stored)", err)
	}
	failing, err := Open(dir, WithNoiseStatement(func(*OutputPrivacy) error { return errors.New("no such mechanism") }))
	if err != nil {
		t.Fatal(err)
	}
	defer failing.Close()
	if _, err := failing.Get(ctx, "old"); err == nil {
		t.Error("a statement that fails: Get returned no error")
	}
}
