package study

import (
	"math"
	"testing"
)

// TestDirection pins the meaning of each direction: parsing (with its normal form),
// which of two values is better, the sign that turns a minimisation into GP-UCB's
// maximisation, and the simple regret, ≥ 0 against the true optimum either way.
func TestDirection(t *testing.T) {
	for in, want := range map[string]Direction{"": Maximize, "max": Maximize, "Maximize": Maximize, "maximise": Maximize,
		"min": Minimize, "minimize": Minimize, " minimise ": Minimize} {
		got, err := ParseDirection(in)
		if err != nil || got != want {
			t.Errorf("ParseDirection(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseDirection("up"); err == nil {
		t.Error(`ParseDirection("up") succeeded`)
	}
	if Maximize.String() != "maximize" || Minimize.String() != "minimize" {
		t.Errorf("String: %q, %q", Maximize.String(), Minimize.String())
	}
	if !Maximize.Better(2, 1) || Maximize.Better(1, 2) || !Minimize.Better(1, 2) || Minimize.Better(2, 1) {
		t.Error("Better compares the wrong way")
	}
	if Maximize.Better(1, 1) || Minimize.Better(1, 1) {
		t.Error("Better is not strict")
	}
	if !Maximize.Better(-5, math.NaN()) || !Minimize.Better(5, math.NaN()) || Minimize.Better(math.NaN(), 5) {
		t.Error("Better: a value must beat NaN (none yet) and NaN must beat nothing")
	}
	if Maximize.Sign() != 1 || Minimize.Sign() != -1 {
		t.Errorf("Sign: %v, %v", Maximize.Sign(), Minimize.Sign())
	}
	if r := Maximize.Regret(10, 7); r != 3 {
		t.Errorf("Maximize.Regret(10, 7) = %v, want 3", r)
	}
	if r := Minimize.Regret(-2, 1); r != 3 {
		t.Errorf("Minimize.Regret(−2, 1) = %v, want 3", r)
	}
}

// TestBestAndTopRecordsFollowDirection checks that the best observation, the report's
// table of best rows and its running best all follow the study's direction.
func TestBestAndTopRecordsFollowDirection(t *testing.T) {
	obs := []Observation{{Iteration: 1, Index: 4, Value: 3}, {Iteration: 2, Index: 9, Value: -1}, {Iteration: 3, Index: 2, Value: 7}}
	if i, v := Best(obs, Maximize); i != 2 || v != 7 {
		t.Errorf("Best(maximize) = %d, %v; want 2, 7", i, v)
	}
	if i, v := Best(obs, Minimize); i != 9 || v != -1 {
		t.Errorf("Best(minimize) = %d, %v; want 9, −1", i, v)
	}
	top := topRecords(obs, 2, Minimize)
	if len(top) != 2 || top[0].Index != 9 || top[1].Index != 4 {
		t.Errorf("topRecords(minimize) = %+v, want rows 9 then 4", top)
	}
	rb := runningBest(obs, Minimize)
	if rb[0].Y != 3 || rb[1].Y != -1 || rb[2].Y != -1 {
		t.Errorf("runningBest(minimize) = %v, want 3, −1, −1", rb)
	}
}
