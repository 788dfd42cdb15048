package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// lab records the pending evaluations of a real curator run with --evaluate manual, as
// a person does with 'curator record', each with the row's true progression: the first
// allowed rows, or all after allowAll; the test holds back the row it wants the modeler
// to wait for.
type lab struct {
	bin, state string
	y          []float64
	mu         sync.Mutex
	allowed    int // rows it may still record; < 0: all
	stop, done chan struct{}
}

func startLab(t *testing.T, bin, state string, y []float64, allowed int) *lab {
	l := &lab{bin: bin, state: state, y: y, allowed: allowed, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		for {
			select {
			case <-l.stop:
				return
			case <-time.After(20 * time.Millisecond): // polling for pending rows, not a deadline
			}
			for _, i := range l.pending() {
				l.mu.Lock()
				ok := l.allowed != 0
				l.mu.Unlock()
				if !ok {
					break
				}
				if exec.Command(l.bin, "record", "--state", l.state, "--dataset-id", "diabetes", "--index", strconv.Itoa(i), "--value", fmt.Sprint(l.y[i])).Run() == nil {
					l.mu.Lock()
					if l.allowed > 0 {
						l.allowed--
					}
					l.mu.Unlock()
				}
			}
		}
	}()
	t.Cleanup(l.close)
	return l
}

// pending lists the rows waiting for an evaluation ('curator pending').
func (l *lab) pending() []int {
	out, err := exec.Command(l.bin, "pending", "--state", l.state, "--dataset-id", "diabetes").Output()
	if err != nil {
		return nil
	}
	var rows []int
	for _, f := range strings.Fields(string(out)) {
		if i, err := strconv.Atoi(f); err == nil {
			rows = append(rows, i)
		}
	}
	return rows
}

// allowAll lets the lab record every row from now on.
func (l *lab) allowAll() {
	l.mu.Lock()
	l.allowed = -1
	l.mu.Unlock()
}

func (l *lab) close() {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
}

// TestModelerCtrlC sends SIGINT to a real `modeler run --json` while it waits for its
// (k+1)-th answer: the curator evaluates rows manually and the test's lab records only
// k of them, so the signal arrives after exactly k answers, whatever the machine's speed.
// The modeler must exit with status 130, say what was kept (the study and its k answers,
// or nothing without --study) and how to resume, and print a final JSON object marked
// interrupted with the k answers and the recommended row so far. The study then resumes
// with the command the message gives and finishes, its first k rows unchanged.
func TestModelerCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries and interrupts a real modeler")
	}
	curBin := buildBinary(t, "./cmd/curator")
	modBin := buildBinary(t, "./cmd/modeler")
	ds := loadDiabetes(t)
	const k, T = 5, 12
	dir := t.TempDir()
	for _, name := range []string{"ctrl-c", ""} {
		t.Run("study="+name, func(t *testing.T) {
			// A curator of its own, so that every answer needs a recorded evaluation.
			state := t.TempDir()
			cur := startRealCurator(t, curBin, "--data", diabetesPath, "--target", "progression", "--dataset-id", "diabetes", "--state", state,
				"--budget-epsilon", "100", "--budget-delta", "0.1", "--evaluate", "manual", "--schema", diabetesSchema)
			defer cur.kill()
			lab := startLab(t, curBin, state, ds.Y, k)
			args := []string{"run", "--curator", cur.addr, "--identity", "ctrl-c-vendor", "--r", "5", "--epsilon", "2", "--delta", "1e-4",
				"--iterations", strconv.Itoa(T), "--json"}
			if name != "" {
				args = append(args, "--study", name, "--studies-dir", dir)
			}
			m := startModeler(t, modBin, args...)
			var stderr []string
			for l := range m.lines {
				stderr = append(stderr, l.text)
				if it, ok := progressIteration(l.text); ok && it == k {
					break
				}
			}
			// The k-th answer arrived; the (k+1)-th row is asked but left pending.
			for len(lab.pending()) == 0 {
				time.Sleep(20 * time.Millisecond) // waiting for the modeler's next query, not a deadline
			}
			if err := m.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			for l := range m.lines {
				stderr = append(stderr, l.text)
			}
			err := m.cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 130 {
				t.Errorf("modeler after SIGINT: %v, want exit status 130", err)
			}
			msg := strings.Join(stderr, "\n")
			want := fmt.Sprintf("modeler: interrupted by Ctrl-C (SIGINT): study %s is kept with its projection and %d of %d answers; `modeler run --study %s` resumes it", name, k, T, name)
			if name == "" {
				want = fmt.Sprintf("modeler: interrupted by Ctrl-C (SIGINT) after %d of %d answers: nothing was kept (no --study)", k, T)
			}
			if !strings.Contains(msg, want) || strings.Contains(msg, "context canceled") {
				t.Errorf("stderr after SIGINT lacks %q (or shows a raw context error):\n%s", want, msg)
			}
			lines := strings.Split(strings.TrimSpace(m.stdout.String()), "\n")
			var res struct {
				Interrupted bool      `json:"interrupted"`
				Iterations  int       `json:"iterations"`
				Queried     []int     `json:"queried"`
				Values      []float64 `json:"values"`
				Recommended int       `json:"recommended_index"`
				Study       string    `json:"study"`
			}
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
				t.Fatalf("last line of stdout after SIGINT is not JSON: %v\n%s", err, m.stdout.String())
			}
			if !res.Interrupted || res.Iterations != k || len(res.Queried) != k || len(res.Values) != k || res.Study != name ||
				!slices.Contains(res.Queried, res.Recommended) {
				t.Errorf("JSON after SIGINT = %+v, want interrupted with %d answers and a recommended row among them", res, k)
			}
			if !strings.Contains(msg, fmt.Sprintf("; recommended row so far: %d (posterior mean ", res.Recommended)) {
				t.Errorf("stderr after SIGINT does not name the recommended row so far, %d:\n%s", res.Recommended, msg)
			}
			t.Logf("after SIGINT:\n%s", msg)
			if name == "" {
				return
			}
			// `modeler studies` gives the interruption as the reason the run stopped.
			list, err := exec.Command(modBin, "studies", "--studies-dir", dir).Output()
			if err != nil || !strings.Contains(string(list), "(interrupted by Ctrl-C (SIGINT))") {
				t.Errorf("modeler studies after SIGINT: %v\n%s", err, list)
			}
			// Resumed as the message says, the study finishes, keeping its first k rows.
			lab.allowAll()
			out, err := exec.Command(modBin, "run", "--study", name, "--studies-dir", dir, "--quiet", "--json").Output()
			if err != nil {
				t.Fatalf("modeler run --study %s after SIGINT: %v", name, err)
			}
			outLines := strings.Split(strings.TrimSpace(string(out)), "\n")
			var fin struct {
				Interrupted bool  `json:"interrupted"`
				Queried     []int `json:"queried"`
			}
			if err := json.Unmarshal([]byte(outLines[len(outLines)-1]), &fin); err != nil {
				t.Fatal(err)
			}
			if fin.Interrupted || len(fin.Queried) != T || !slices.Equal(fin.Queried[:k], res.Queried) {
				t.Errorf("resumed study queried %v (interrupted %v); want %d rows starting with %v", fin.Queried, fin.Interrupted, T, res.Queried)
			}
		})
	}
}
