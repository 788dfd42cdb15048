package study

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var testSettings = Settings{R: 5, Epsilon: math.Exp(2), Delta: 1e-4, Iterations: 6, Batch: 2, Kernel: "se",
	SignalVariance: 1, NoiseVariance: 1e-3, DeltaUCB: 0.05, InitialIndex: -1}

var testConn = Connection{Curator: "127.0.0.1:7070", Identity: "acme", CA: "/etc/privbo/ca.pem"}

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// testZ is a 4 × 2 matrix with values whose bits must survive storage exactly.
var testZ = []float64{math.Pi, -0.1, 1e-300, math.MaxFloat64, -math.SmallestNonzeroFloat64, 2, 0, math.Nextafter(1, 2)}

var testRelease = Release{ID: "rel-1", Dataset: "diabetes", Rows: 4, Cols: 2, Epsilon: math.Exp(2), Delta: 1e-4,
	Guarantee: "(7.39, 1e-4)-DP", OutputPrivacy: OutputPrivacy{Mechanism: "laplace", EpsilonPerIndex: 0.01, Lower: 0, Upper: 400}}

func TestCreateGetListLifecycle(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	st, err := s.Create(ctx, "alpha", testConn, testSettings)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "alpha" || st.Connection != testConn || st.Settings != testSettings || st.Release != nil || st.InitialIndex != -1 || st.Done {
		t.Fatalf("Create = %+v, want a new study with the given connection and settings", st)
	}
	if _, err := s.Create(ctx, "alpha", testConn, testSettings); !errors.Is(err, ErrExists) {
		t.Errorf("Create(alpha) again: err = %v, want ErrExists", err)
	}
	if _, err := s.Get(ctx, "beta"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(beta): err = %v, want ErrNotFound", err)
	}
	if _, err := s.Create(ctx, "beta", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	state := func(name string) Summary {
		t.Helper()
		list, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 2 || list[0].Name != "alpha" || list[1].Name != "beta" {
			t.Fatalf("List = %+v, want alpha and beta in order", list)
		}
		for _, sum := range list {
			if sum.Name == name {
				return sum
			}
		}
		panic("unreachable")
	}
	if got := state("alpha"); got.State != "new" || got.Done != 0 || got.Total != 6 || got.BestIndex != -1 || got.BestValue != nil {
		t.Errorf("summary of a new study = %+v, want state new, 0/6, no best", got)
	}
	if err := s.SaveRelease(ctx, "alpha", testRelease, testZ); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInitialIndex(ctx, "alpha", 3); err != nil {
		t.Fatal(err)
	}
	if err := s.SetInitialIndex(ctx, "alpha", 2); err == nil {
		t.Error("SetInitialIndex(alpha, 2) after 3: no error, want one (the initial row cannot change)")
	}
	b := Budget{Identity: "acme", EpsilonLimit: 10, DeltaLimit: 1e-3, EpsilonSpent: 7.5, EpsilonRemaining: 2.5}
	if err := s.Record(ctx, "alpha", []Observation{{Iteration: 1, Round: 1, Index: 3, Value: 10}}, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, "alpha", []Observation{{Iteration: 2, Round: 2, Index: 0, Value: 30}, {Iteration: 3, Round: 2, Index: 1, Value: 20, Replayed: true}}, b); err != nil {
		t.Fatal(err)
	}
	if got := state("alpha"); got.State != "stopped" || got.Done != 3 || got.Dataset != "diabetes" || got.BestIndex != 0 || got.BestValue == nil || *got.BestValue != 30 {
		t.Errorf("summary after 3 answers = %+v, want stopped, 3/6, best row 0 value 30", got)
	}
	unlock, err := s.Lock("alpha")
	if err != nil {
		t.Fatal(err)
	}
	if got := state("alpha"); got.State != "running" {
		t.Errorf("state while locked = %q, want running", got.State)
	}
	unlock()
	if err := s.Finish(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	if got := state("alpha"); got.State != "done" {
		t.Errorf("state after Finish = %q, want done", got.State)
	}
	st, err = s.Get(ctx, "alpha")
	if err != nil {
		t.Fatal(err)
	}
	if st.InitialIndex != 3 || st.Budget != b || st.Release == nil || *st.Release != testRelease {
		t.Errorf("Get(alpha) = initial %d, budget %+v, release %+v; want 3, %+v, %+v", st.InitialIndex, st.Budget, st.Release, b, testRelease)
	}
}

// TestDurability writes a study, closes the store, reopens the directory and checks every
// value bit for bit.
func TestDurability(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, "d", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRelease(ctx, "d", testRelease, testZ); err != nil {
		t.Fatal(err)
	}
	if err := s.SetKnownBest(ctx, "d", 346); err != nil {
		t.Fatal(err)
	}
	want := []Observation{
		{Iteration: 1, Round: 1, Index: 2, Value: math.Pi},
		{Iteration: 2, Round: 2, Index: 0, Value: -1e-300},
		{Iteration: 3, Round: 2, Index: 3, Value: math.Nextafter(100, 0), Replayed: true},
	}
	for _, r := range [][]Observation{want[:1], want[1:]} {
		if err := s.Record(ctx, "d", r, Budget{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openStore(t, dir)
	st, err := s.Get(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if st.KnownBest == nil || *st.KnownBest != 346 || st.Settings != testSettings {
		t.Errorf("reopened study: known best %v, settings %+v; want 346, %+v", st.KnownBest, st.Settings, testSettings)
	}
	z, err := s.LoadZ(st)
	if err != nil {
		t.Fatal(err)
	}
	for k := range testZ {
		if math.Float64bits(z[k]) != math.Float64bits(testZ[k]) {
			t.Errorf("LoadZ[%d] = %v, want %v bit for bit", k, z[k], testZ[k])
		}
	}
	got, err := s.Observations(ctx, "d")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("Observations = %d, want %d", len(got), len(want))
	}
	for k := range want {
		g, w := got[k], want[k]
		if g.Iteration != w.Iteration || g.Round != w.Round || g.Index != w.Index || math.Float64bits(g.Value) != math.Float64bits(w.Value) || g.Replayed != w.Replayed {
			t.Errorf("Observations[%d] = %+v, want %+v", k, g, w)
		}
	}
}

func TestRecordRejects(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Create(ctx, "r", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, "r", []Observation{{Iteration: 1, Round: 1, Index: 0, Value: 1}}, Budget{}); err == nil {
		t.Error("Record before the release: no error")
	}
	if err := s.SaveRelease(ctx, "r", testRelease, testZ); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, "r", []Observation{{Iteration: 1, Round: 1, Index: 0, Value: 1}}, Budget{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		obs  []Observation
	}{
		{"repeated iteration", []Observation{{Iteration: 1, Round: 2, Index: 1, Value: 1}}},
		{"gap", []Observation{{Iteration: 3, Round: 2, Index: 1, Value: 1}}},
		{"gap inside a round", []Observation{{Iteration: 2, Round: 2, Index: 1, Value: 1}, {Iteration: 4, Round: 2, Index: 2, Value: 1}}},
		{"row out of range", []Observation{{Iteration: 2, Round: 2, Index: 4, Value: 1}}},
		{"NaN", []Observation{{Iteration: 2, Round: 2, Index: 1, Value: math.NaN()}}},
		{"round 0", []Observation{{Iteration: 2, Round: 0, Index: 1, Value: 1}}},
		{"empty", nil},
	} {
		if err := s.Record(ctx, "r", tc.obs, Budget{}); err == nil {
			t.Errorf("Record(%s): no error", tc.name)
		}
	}
	// A rejected round leaves nothing behind, not even its valid first half.
	if got, err := s.Observations(ctx, "r"); err != nil || len(got) != 1 {
		t.Errorf("Observations after rejected rounds = %d, %v; want 1", len(got), err)
	}
	if err := s.Record(ctx, "nobody", []Observation{{Iteration: 1, Round: 1, Index: 0, Value: 1}}, Budget{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("Record(nobody): err = %v, want ErrNotFound", err)
	}
}

func TestSaveRelease(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Create(ctx, "z", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	// A file left by a crash between writing Z and committing its row is replaced.
	if err := os.WriteFile(s.ZPath("z"), []byte("stale"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRelease(ctx, "z", testRelease, testZ); err != nil {
		t.Fatalf("SaveRelease over a stale file: %v", err)
	}
	if err := s.SaveRelease(ctx, "z", testRelease, testZ); err != nil {
		t.Errorf("SaveRelease of the same release again: %v, want nil", err)
	}
	other := append([]float64(nil), testZ...)
	other[0] = 1
	if err := s.SaveRelease(ctx, "z", testRelease, other); err == nil {
		t.Error("SaveRelease of a different matrix: no error")
	}
	if err := s.SaveRelease(ctx, "z", testRelease, testZ[:6]); err == nil {
		t.Error("SaveRelease of 6 values for 4 × 2: no error")
	}
	st, err := s.Get(ctx, "z")
	if err != nil {
		t.Fatal(err)
	}
	// A damaged file is detected.
	b, err := os.ReadFile(s.ZPath("z"))
	if err != nil {
		t.Fatal(err)
	}
	b[3] ^= 1
	if err := os.WriteFile(s.ZPath("z"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.LoadZ(st); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("LoadZ of a damaged file: err = %v, want a SHA-256 mismatch", err)
	}
	// So is a file cut short or grown by a byte.
	for _, cut := range [][]byte{b[:len(b)-1], append(b, 0)} {
		if err := os.WriteFile(s.ZPath("z"), cut, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := s.LoadZ(st); err == nil {
			t.Errorf("LoadZ of a file of %d bytes for %d: no error", len(cut), len(b))
		}
	}
}

func TestSettingsDiff(t *testing.T) {
	other := testSettings
	other.R, other.Label = 6, "b"
	for _, tc := range []struct {
		name  string
		given Settings
		want  []string
	}{
		{"equal", testSettings, nil},
		{"two differ", other, []string{"r: stored 5, given 6", "label: stored , given b"}},
	} {
		got := testSettings.Diff(tc.given)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Diff(%s) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestNamed checks that every setting has a named value that parses back exactly.
func TestNamed(t *testing.T) {
	fv := testSettings.Named()
	if len(fv) != 20 {
		t.Errorf("Named has %d entries, want 20 (one per field of Settings)", len(fv))
	}
	if v, ok := fv["projection-noise"]; !ok || v != "" {
		t.Errorf(`Named()["projection-noise"] = %q, %v; want "" (the default, modelled)`, v, ok)
	}
	for _, tc := range []struct {
		flag string
		want float64
	}{{"epsilon", testSettings.Epsilon}, {"delta", 1e-4}, {"noise-variance", 1e-3}, {"r", 5}, {"initial-index", -1}} {
		got, err := strconv.ParseFloat(fv[tc.flag], 64)
		if err != nil || got != tc.want {
			t.Errorf("Named()[%q] = %q, want %v exactly", tc.flag, fv[tc.flag], tc.want)
		}
	}
	if fv["direction"] != "maximize" {
		t.Errorf(`Named()["direction"] = %q, want "maximize" (the zero Direction)`, fv["direction"])
	}
	if fv["kernel"] != "se" || fv["allow-repeats"] != "false" || fv["fit-every"] != "0" {
		t.Errorf("Named kernel, allow-repeats, fit-every = %q, %q, %q; want se, false, 0", fv["kernel"], fv["allow-repeats"], fv["fit-every"])
	}
}

// TestSettingsBeforeFitEvery loads a study stored before the fit-every setting existed
// (its settings JSON has no such key): it reads as 0, fixed hyperparameters.
func TestSettingsBeforeFitEvery(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	old := `{"r":5,"epsilon":7.38905609893065,"delta":0.0001,"label":"","iterations":6,"batch":2,"kernel":"se","lengthscale":0,` +
		`"signal-variance":1,"noise-variance":0.001,"delta-ucb":0.05,"beta":0,"allow-repeats":false,"raw-outputs":false,"initial-index":-1}`
	if _, err := s.db.ExecContext(ctx, `INSERT INTO studies (name, created_ns, updated_ns, connection, settings) VALUES ('old', 1, 1, '{}', ?)`, old); err != nil {
		t.Fatal(err)
	}
	st, err := s.Get(ctx, "old")
	if err != nil {
		t.Fatal(err)
	}
	if st.Settings != testSettings {
		t.Errorf("settings stored without fit-every = %+v, want %+v (fit-every 0)", st.Settings, testSettings)
	}
}

// TestSetIterations raises and lowers a study's T around its recorded observations.
func TestSetIterations(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Create(ctx, "x", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRelease(ctx, "x", testRelease, testZ); err != nil {
		t.Fatal(err)
	}
	obs := []Observation{{Iteration: 1, Round: 1, Index: 3, Value: 10}, {Iteration: 2, Round: 2, Index: 0, Value: 30},
		{Iteration: 3, Round: 2, Index: 1, Value: 20}}
	if err := s.Record(ctx, "x", obs, Budget{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	get := func() *Study {
		t.Helper()
		st, err := s.Get(ctx, "x")
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	if err := s.SetIterations(ctx, "x", 2); err == nil || !strings.Contains(err.Error(), "3 iterations are already recorded") {
		t.Errorf("SetIterations(2) with 3 recorded: err = %v, want one saying 3 are recorded", err)
	}
	if st := get(); st.Settings.Iterations != 6 || !st.Done {
		t.Errorf("after a refused SetIterations: T = %d, done %v; want 6, done", st.Settings.Iterations, st.Done)
	}
	if err := s.SetIterations(ctx, "x", 3); err != nil {
		t.Fatal(err)
	}
	if st := get(); st.Settings.Iterations != 3 || !st.Done {
		t.Errorf("after SetIterations(3) with 3 recorded: T = %d, done %v; want 3, still done", st.Settings.Iterations, st.Done)
	}
	if err := s.SetIterations(ctx, "x", 10); err != nil {
		t.Fatal(err)
	}
	want := testSettings
	want.Iterations = 10
	if st := get(); st.Settings != want || st.Done {
		t.Errorf("after SetIterations(10): settings %+v, done %v; want %+v, not done", st.Settings, st.Done, want)
	}
	if err := s.SetIterations(ctx, "nobody", 10); !errors.Is(err, ErrNotFound) {
		t.Errorf("SetIterations of a missing study: err = %v, want ErrNotFound", err)
	}
}

func TestValidName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{{"s1", true}, {"diabetes.r5-run_2", true}, {"", false}, {"../x", false}, {".hidden", false}, {"a/b", false}, {"a b", false},
		{strings.Repeat("x", 100), true}, {strings.Repeat("x", 101), false}} {
		if err := ValidName(tc.name); (err == nil) != tc.ok {
			t.Errorf("ValidName(%q) = %v, want ok = %v", tc.name, err, tc.ok)
		}
	}
	if err := testSettings.Validate(); err != nil {
		t.Errorf("Validate(testSettings) = %v", err)
	}
	bad := testSettings
	bad.Batch = 0
	if err := bad.Validate(); err == nil {
		t.Error("Validate(batch 0): no error")
	}
	bad = testSettings
	bad.Epsilon = math.Inf(1)
	if err := bad.Validate(); err == nil {
		t.Error("Validate(ε = +Inf): no error")
	}
	bad = testSettings
	bad.FitEvery = -1
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "fit-every must be ≥ 0") {
		t.Errorf("Validate(fit-every −1) = %v, want a fit-every error", err)
	}
}

func TestLock(t *testing.T) {
	s := openStore(t, t.TempDir())
	unlock, err := s.Lock("l")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Lock("l"); !errors.Is(err, ErrLocked) {
		t.Errorf("second Lock: err = %v, want ErrLocked", err)
	}
	unlock()
	unlock2, err := s.Lock("l")
	if err != nil {
		t.Errorf("Lock after unlock: %v", err)
	} else {
		unlock2()
	}
}

func TestDefaultDir(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", "/var/state")
	if got, err := DefaultDir(); err != nil || got != "/var/state/privbo" {
		t.Errorf("DefaultDir with XDG_STATE_HOME=/var/state = %q, %v; want /var/state/privbo", got, err)
	}
	t.Setenv("XDG_STATE_HOME", "relative")
	t.Setenv("HOME", "/home/u")
	if got, err := DefaultDir(); err != nil || got != filepath.Join("/home/u", ".local", "state", "privbo") {
		t.Errorf("DefaultDir with a relative XDG_STATE_HOME = %q, %v; want /home/u/.local/state/privbo", got, err)
	}
}

// TestReset checks that a study without a release takes new settings and a new
// connection, and that one holding a release refuses with ErrReleased.
func TestReset(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, t.TempDir())
	if _, err := s.Create(ctx, "r", testConn, testSettings); err != nil {
		t.Fatal(err)
	}
	if err := s.SetError(ctx, "r", "initial index out of range"); err != nil {
		t.Fatal(err)
	}
	set, conn := testSettings, testConn
	set.InitialIndex, conn.Identity = 3, "bob"
	if err := s.Reset(ctx, "r", conn, set); err != nil {
		t.Fatalf("Reset of a study without a release: %v", err)
	}
	st, err := s.Get(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	if st.Settings != set || st.Connection != conn || st.LastError != "" {
		t.Errorf("after Reset: settings %+v, connection %+v, last error %q", st.Settings, st.Connection, st.LastError)
	}
	if err := s.SaveRelease(ctx, "r", testRelease, testZ); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, "r", testConn, testSettings); !errors.Is(err, ErrReleased) {
		t.Errorf("Reset of a released study: %v, want ErrReleased", err)
	}
	if err := s.Reset(ctx, "nope", testConn, testSettings); !errors.Is(err, ErrNotFound) {
		t.Errorf("Reset of a missing study: %v, want ErrNotFound", err)
	}
}
