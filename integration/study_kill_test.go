package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/study"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// modelerRun is one `modeler run` process: its stderr lines arrive with the time since
// the process started.
type modelerRun struct {
	cmd    *exec.Cmd
	start  time.Time
	lines  chan timedLine
	stdout bytes.Buffer
}

type timedLine struct {
	text string
	at   time.Duration
}

func startModeler(t *testing.T, bin string, args ...string) *modelerRun {
	t.Helper()
	m := &modelerRun{cmd: exec.Command(bin, args...), lines: make(chan timedLine, 1024)}
	m.cmd.Stdout = &m.stdout
	pipe, err := m.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	m.start = time.Now()
	if err := m.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			m.lines <- timedLine{sc.Text(), time.Since(m.start)}
		}
		close(m.lines)
	}()
	return m
}

// progressIteration parses "iteration   7/40 ..." progress lines.
func progressIteration(line string) (int, bool) {
	var it, total int
	if _, err := fmt.Sscanf(line, "iteration %d/%d", &it, &total); err != nil {
		return 0, false
	}
	return it, true
}

// TestStudySurvivesSIGKILL runs `modeler run --study` as a real process against a real
// curator process and kills it with SIGKILL at random moments (once at a random instant
// after start, possibly during the projection, then three times after a random
// iteration), resuming each time with the same command. The finished study must have
// made the same queries, in the same order, as an uninterrupted run with the same
// settings and initial row, and the curator must have charged one projection and one
// ε_out for all the answers (they compose in parallel) — nothing twice. The resume overhead (process start to the
// first new answer, and the in-process rebuild the modeler reports) is logged.
func TestStudySurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries and kills a real modeler")
	}
	curBin := buildBinary(t, "./cmd/curator")
	modBin := buildBinary(t, "./cmd/modeler")
	const answerEps, T = 0.001, 40
	cur := startRealCurator(t, curBin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes", "--state", t.TempDir(),
		"--budget-epsilon", "100", "--budget-delta", "0.1",
		"--output-privacy", "laplace", "--output-epsilon", fmt.Sprint(answerEps), "--schema", diabetesSchema)
	defer cur.kill()
	dir := t.TempDir()
	const identity = "kill-vendor"
	common := []string{"--curator", cur.addr, "--identity", identity, "--studies-dir", dir,
		"--r", "5", "--epsilon", fmt.Sprint(math.Exp(2)), "--delta", "1e-4", "--iterations", fmt.Sprint(T), "--json"}

	rng := rand.New(rand.NewPCG(8, 8))
	// Kill 1 at a random instant in the first 40 ms; kills 2–4 after random iterations.
	after := []int{0}
	for len(after) < 4 {
		if k := 3 + rng.IntN(T-8); !slices.Contains(after, k) {
			after = append(after, k)
		}
	}
	slices.Sort(after[1:])
	var overheads, rebuilds []string
	kills := 0
	var killAt time.Duration
	for round := 0; ; round++ {
		m := startModeler(t, modBin, append([]string{"run", "--study", "killed"}, common...)...)
		if round == 0 {
			killAt = time.Duration(rng.IntN(40)) * time.Millisecond
		}
		var timer <-chan time.Time
		if round < len(after) && after[round] == 0 {
			timer = time.After(killAt)
		}
		killed, firstNew := false, time.Duration(0)
		for done := false; !done; {
			select {
			case l, ok := <-m.lines:
				if !ok {
					done = true
					break
				}
				if strings.HasPrefix(l.text, "resuming study") {
					rebuilds = append(rebuilds, l.text[strings.LastIndex(l.text, "rebuilt in ")+len("rebuilt in "):])
				}
				it, ok := progressIteration(l.text)
				if !ok {
					continue
				}
				if firstNew == 0 {
					firstNew = l.at
				}
				if !killed && round < len(after) && after[round] > 0 && it >= after[round] {
					m.cmd.Process.Kill() // SIGKILL
					killed = true
				}
			case <-timer:
				m.cmd.Process.Kill()
				killed = true
				timer = nil
			}
		}
		err := m.cmd.Wait()
		if round > 0 && firstNew > 0 {
			overheads = append(overheads, firstNew.Round(time.Millisecond).String())
		}
		if killed && err != nil {
			kills++
			continue
		}
		if err != nil {
			t.Fatalf("modeler run (round %d): %v", round, err)
		}
		break
	}
	if kills < 4 {
		t.Errorf("the modeler was killed %d times, want 4 (it finished before a kill)", kills)
	}
	type result struct {
		Queried   []int     `json:"queried"`
		Values    []float64 `json:"values"`
		ReleaseID string    `json:"release_id"`
	}
	var got result
	store, err := study.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Get(context.Background(), "killed")
	if err != nil {
		t.Fatal(err)
	}
	obs, err := store.Observations(context.Background(), "killed")
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range obs {
		got.Queried = append(got.Queried, o.Index)
		got.Values = append(got.Values, o.Value)
	}
	if !st.Done || len(obs) != T {
		t.Fatalf("killed study: done %v with %d observations, want done with %d", st.Done, len(obs), T)
	}

	ref := startModeler(t, modBin, append([]string{"run", "--study", "uninterrupted", "--initial-index", fmt.Sprint(st.InitialIndex)}, common...)...)
	for range ref.lines {
	}
	if err := ref.cmd.Wait(); err != nil {
		t.Fatalf("uninterrupted modeler run: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(ref.stdout.String()), "\n")
	var want result
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &want); err != nil {
		t.Fatalf("uninterrupted run: %v\n%s", err, ref.stdout.String())
	}
	if want.ReleaseID != st.Release.ID {
		t.Fatalf("uninterrupted run used release %s, want %s", want.ReleaseID, st.Release.ID)
	}
	distinct := func(q []int) int {
		s := slices.Clone(q)
		slices.Sort(s)
		return len(slices.Compact(s))
	}
	if distinct(got.Queried) != distinct(want.Queried) || !slices.Equal(got.Queried, want.Queried) || !slices.Equal(got.Values, want.Values) {
		t.Errorf("killed study queried %v (%d distinct), uninterrupted %v (%d distinct); want the same sequence",
			got.Queried, distinct(got.Queried), want.Queried, distinct(want.Queried))
	}

	b, err := curatorv1.NewCuratorServiceClient(dial(t, cur.addr, identity)).GetBudget(context.Background(), &curatorv1.GetBudgetRequest{})
	if err != nil {
		t.Fatal(err)
	}
	wantSpent := math.Exp(2) + answerEps // the answers compose in parallel: one ε_out
	if spent := b.GetBudget().GetEpsilonSpent(); math.Abs(spent-wantSpent) > 1e-9 {
		t.Errorf("curator charged ε = %.12g, want %.12g: one projection and one ε_out for %d answers", spent, wantSpent, distinct(got.Queried))
	}
	t.Logf("%d SIGKILLs (first %v after start, then after iterations %v); %d distinct rows, same sequence as the uninterrupted run; spent ε = %.6g = e² + %g",
		kills, killAt, after[1:], distinct(got.Queried), b.GetBudget().GetEpsilonSpent(), answerEps)
	t.Logf("resume overhead, process start → first new answer: %s; GP rebuild reported by the modeler: %s",
		strings.Join(overheads, ", "), strings.Join(rebuilds, ", "))
}
