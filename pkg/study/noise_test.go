package study

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/privbo/privbo/pkg/noise"
)

// TestAnswerNoise checks that the answers' noise is what the curator stated and nothing
// else: exact answers none, a stated sd and family as they are, and a record without a
// statement ErrNoiseUnstated, whatever its mechanism is called (this package calibrates
// no mechanism; see pkg/study/calibrate).
func TestAnswerNoise(t *testing.T) {
	if an, err := (OutputPrivacy{Mechanism: "laplace", Noise: noise.None}).AnswerNoise(); err != nil || an != (AnswerNoise{Noise: noise.None}) {
		t.Errorf("exact answers: noise %+v, %v; want none", an, err)
	}
	an, err := OutputPrivacy{Mechanism: "gaussian", EpsilonPerIndex: 1, Lower: 0, Upper: 1, NoiseSD: 3, Noise: noise.Laplace}.AnswerNoise()
	if err != nil || an != (AnswerNoise{SD: 3, Variance: 9, Noise: noise.Laplace}) {
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
	if _, err := (OutputPrivacy{Mechanism: "laplace", NoiseSD: math.Inf(1), Noise: noise.Laplace}).AnswerNoise(); err == nil {
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
		op.NoiseSD, op.Noise = 56.5, noise.Laplace
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
	if an, err := st.Release.OutputPrivacy.AnswerNoise(); err != nil || an.SD != 56.5 || an.Noise != noise.Laplace || calls != 1 {
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

// TestNoiseFamilyOfOldStudyFiles: a study file written before the family was stored by
// name ("exact": true, "laplace": true, or a noise sd alone for Gaussian answers) resumes
// with its family, and the release is stored again by name only.
func TestNoiseFamilyOfOldStudyFiles(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	for i, tc := range []struct {
		stored string // the release's output_privacy as an older modeler wrote it
		want   noise.Family
		sd     float64
	}{
		{`{"mechanism":"laplace","epsilon_per_index":1,"delta_per_index":0,"upper":400,"noise_sd":565.7,"laplace":true}`, noise.Laplace, 565.7},
		{`{"mechanism":"gaussian","epsilon_per_index":1,"delta_per_index":1e-6,"upper":400,"noise_sd":1900}`, noise.Gaussian, 1900},
		{`{"mechanism":"none","epsilon_per_index":0,"delta_per_index":0,"exact":true}`, noise.None, 0},
		{`{"mechanism":"laplace","epsilon_per_index":1,"delta_per_index":0,"upper":400}`, noise.Unstated, 0},
		{`{"mechanism":"laplace","epsilon_per_index":1,"delta_per_index":0,"upper":400,"noise":"laplace","noise_sd":565.7}`, noise.Laplace, 565.7},
	} {
		name := fmt.Sprintf("old-%d", i)
		if _, err := s.Create(ctx, name, testConn, testSettings); err != nil {
			t.Fatal(err)
		}
		if err := s.SaveRelease(ctx, name, testRelease, testZ); err != nil {
			t.Fatal(err)
		}
		old, err := json.Marshal(testRelease)
		if err != nil {
			t.Fatal(err)
		}
		var rel map[string]json.RawMessage
		if err := json.Unmarshal(old, &rel); err != nil {
			t.Fatal(err)
		}
		rel["output_privacy"] = json.RawMessage(tc.stored)
		if old, err = json.Marshal(rel); err != nil {
			t.Fatal(err)
		}
		if err := s.update(ctx, name, `release = ?`, string(old)); err != nil {
			t.Fatal(err)
		}
		st, err := s.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		op := st.Release.OutputPrivacy
		if op.Noise != tc.want || op.NoiseSD != tc.sd {
			t.Errorf("%s: family %v, sd %g; want %v, %g", tc.stored, op.Noise, op.NoiseSD, tc.want, tc.sd)
		}
		b, err := json.Marshal(op)
		if err != nil || bytes.Contains(b, []byte(`"laplace":`)) || bytes.Contains(b, []byte(`"exact"`)) ||
			(tc.want != noise.Unstated) != bytes.Contains(b, []byte(`"noise":"`+tc.want.String()+`"`)) {
			t.Errorf("%s stored again as %s, %v; want the family by name only", tc.stored, b, err)
		}
	}
}
