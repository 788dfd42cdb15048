package evaluator

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// script writes a shell script into a temporary directory and returns its
// path.
func script(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "eval.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func newProgram(t *testing.T, body string, timeout time.Duration) *Program {
	t.Helper()
	p, err := New(Config{Command: []string{script(t, body)}, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var input = map[string]float64{"lambda": 0.125, "lr": 3}

func TestEvaluateScores(t *testing.T) {
	tests := []struct {
		name, body string
		want       float64
	}{
		{"object", `echo '{"score": 0.93}'`, 0.93},
		{"object with other fields", `echo '{"model": "x", "score": -1.5e-3, "n": [1,2]}'`, -1.5e-3},
		{"bare number", `echo 42`, 42},
		{"spaces and newlines", `printf '\n  {"score":\n 7}\n\n'`, 7},
		{"stderr ignored on success", `echo progress >&2; echo '{"score": 1}'`, 1},
		{"program ignores stdin", `exec echo 0.5`, 0.5},
		// The input arrives as one JSON object on stdin: echo a field back.
		{"reads input", `read -r line; v=$(printf '%s' "$line" | sed -n 's/.*"lambda":\([^,}]*\).*/\1/p'); printf '{"score": %s}\n' "$v"`, 0.125},
	}
	for _, tt := range tests {
		p := newProgram(t, tt.body, 10*time.Second)
		got, err := p.Evaluate(context.Background(), input)
		if err != nil || got != tt.want {
			t.Errorf("%s: Evaluate = %g, %v, want %g, nil", tt.name, got, err, tt.want)
		}
	}
}

// TestEvaluateInputExact checks the whole of standard input: the JSON
// encoding of the input, a newline, end of file.
func TestEvaluateInputExact(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "stdin")
	p := newProgram(t, `cat > '`+out+`'; echo 1`, 10*time.Second)
	if _, err := p.Evaluate(context.Background(), input); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"lambda":0.125,"lr":3}` + "\n"; string(got) != want {
		t.Errorf("program read %q on stdin, want %q", got, want)
	}
}

func TestEvaluateBadOutput(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"nothing", `true`, "no output"},
		{"garbage", `echo hello world`, "output is not JSON"},
		{"NaN object", `echo '{"score": NaN}'`, "NaN and Infinity are not JSON numbers"},
		{"NaN bare", `echo NaN`, "NaN and Infinity"},
		{"Infinity", `echo '{"score": Infinity}'`, "NaN and Infinity"},
		{"out of range", `echo '{"score": 1e999}'`, "outside the float64 range"},
		{"missing score", `echo '{"accuracy": 0.9}'`, `no "score" field`},
		{"string score", `echo '{"score": "0.9"}'`, `"score" is a string`},
		{"null score", `echo '{"score": null}'`, `"score" is null`},
		{"array", `echo '[0.9]'`, "output is an array"},
		{"two values", `echo 1; echo 2`, "more than one JSON value"},
		{"trailing garbage", `echo '{"score": 1} x'`, "more than one JSON value"},
		{"too much", `head -c 1100000 /dev/zero | tr '\0' ' '; echo 1`, "more than 1048576 bytes"},
	}
	for _, tt := range tests {
		p := newProgram(t, tt.body, 10*time.Second)
		got, err := p.Evaluate(context.Background(), input)
		if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Evaluate = %g, %v, want ErrBadOutput containing %q", tt.name, got, err, tt.want)
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("%s: error %T is not an *Error", tt.name, err)
		}
	}
}

func TestEvaluateExit(t *testing.T) {
	p := newProgram(t, `echo 'Traceback: model diverged' >&2; echo '{"score": 1}'; exit 3`, 10*time.Second)
	_, err := p.Evaluate(context.Background(), input)
	if !errors.Is(err, ErrExit) || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "model diverged") {
		t.Errorf("Evaluate(exit 3) error = %v, want ErrExit naming status 3 and quoting stderr", err)
	}
	if errors.Is(err, ErrBadOutput) || errors.Is(err, ErrTimeout) {
		t.Errorf("Evaluate(exit 3) error %v matches another sentinel", err)
	}
}

// TestEvaluateStderrBounded: 200 KiB of stderr is kept to its last
// MaxStderr bytes and quoted to at most ~1 KiB in the error.
func TestEvaluateStderrBounded(t *testing.T) {
	p := newProgram(t, `head -c 200000 /dev/zero | tr '\0' 'a' >&2; echo THE-END >&2; exit 1`, 10*time.Second)
	_, err := p.Evaluate(context.Background(), input)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Evaluate error = %v, want an *Error", err)
	}
	if len(e.Stderr) != MaxStderr || !strings.HasSuffix(e.Stderr, "THE-END\n") {
		t.Errorf("captured stderr has %d bytes ending %q, want %d ending %q", len(e.Stderr), e.Stderr[max(0, len(e.Stderr)-10):], MaxStderr, "THE-END\n")
	}
	if msg := err.Error(); len(msg) > 1200 || !strings.Contains(msg, "THE-END") {
		t.Errorf("error text has %d bytes (want ≤ 1200) and should quote the end of stderr: %.100q…", len(msg), msg)
	}
	// What a caller may log instead of the text: status, duration and the full size
	// (200000 'a's and "THE-END\n"), not just the kept tail.
	if e.StderrSize != 200008 || e.ExitStatus != "exit status 1" || e.Elapsed <= 0 {
		t.Errorf("StderrSize, ExitStatus, Elapsed = %d, %q, %v; want 200008, \"exit status 1\", > 0", e.StderrSize, e.ExitStatus, e.Elapsed)
	}
}

// TestEvaluateTimeout: a program sleeping 5 s under a 200 ms timeout fails
// with ErrTimeout well before the sleep ends. The sleep is a child of sh that
// holds its stdout: unless the whole process group is killed, Wait would
// block until the 1 s WaitDelay, so finishing within 900 ms shows the group
// was killed.
func TestEvaluateTimeout(t *testing.T) {
	p := newProgram(t, `sleep 5; echo 1`, 200*time.Millisecond)
	start := time.Now()
	_, err := p.Evaluate(context.Background(), input)
	elapsed := time.Since(start)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "timeout of 200ms") {
		t.Errorf("Evaluate(sleep 5) error = %v, want ErrTimeout naming 200ms", err)
	}
	if elapsed > 900*time.Millisecond {
		t.Errorf("Evaluate(sleep 5) took %v, want < 900ms (process group killed at 200ms)", elapsed)
	}
}

func TestEvaluateCancel(t *testing.T) {
	p := newProgram(t, `sleep 5; echo 1`, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err := p.Evaluate(ctx, input)
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrTimeout) {
		t.Errorf("Evaluate cancelled: error = %v, want context.Canceled and not ErrTimeout", err)
	}
	if elapsed := time.Since(start); elapsed > 900*time.Millisecond {
		t.Errorf("Evaluate cancelled at 100ms returned after %v, want < 900ms", elapsed)
	}
	// Already cancelled: nothing is started.
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	p = newProgram(t, `touch '`+marker+`'; echo 1`, time.Minute)
	if _, err := p.Evaluate(ctx, input); !errors.Is(err, context.Canceled) {
		t.Errorf("Evaluate with a done context: error = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Errorf("Evaluate with a done context started the program")
	}
}

// TestEvaluateBackgroundHoldsOutput: a program that exits but leaves a child
// holding stdout fails with ErrBadOutput after the WaitDelay instead of
// hanging for the child's lifetime.
func TestEvaluateBackgroundHoldsOutput(t *testing.T) {
	p := newProgram(t, `sleep 30 & echo 1`, time.Minute)
	start := time.Now()
	_, err := p.Evaluate(context.Background(), input)
	if !errors.Is(err, ErrBadOutput) || !strings.Contains(err.Error(), "background process") {
		t.Errorf("Evaluate(background child) error = %v, want ErrBadOutput about a background process", err)
	}
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Evaluate(background child) took %v, want about the 1s WaitDelay", elapsed)
	}
}

func TestEvaluateDirAndEnv(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "score.txt"), []byte(`{"score": 0.25}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\ncat score.txt\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A relative path with a slash is resolved against Dir.
	p, err := New(Config{Command: []string{"./run.sh"}, Dir: dir, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Evaluate(context.Background(), input); err != nil || got != 0.25 {
		t.Errorf("Evaluate in Dir = %g, %v, want 0.25", got, err)
	}
	// argv and environment reach the program; PATH lookup of "sh".
	p, err = New(Config{
		Command: []string{"sh", "-c", `printf '{"score": %s%s}' "$SCORE" "$1"`, "argv0", "5"},
		Env:     []string{"SCORE=1.2", "PATH=" + os.Getenv("PATH")},
		Timeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Evaluate(context.Background(), input); err != nil || got != 1.25 {
		t.Errorf("Evaluate with Env and args = %g, %v, want 1.25", got, err)
	}
}

func TestNewErrors(t *testing.T) {
	ok := script(t, "echo 1")
	notExec := filepath.Join(t.TempDir(), "plain.txt")
	if err := os.WriteFile(notExec, []byte("echo 1"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Timeout: time.Second}, "command is empty"},
		{Config{Command: []string{""}, Timeout: time.Second}, "command is empty"},
		{Config{Command: []string{ok}}, "timeout must be positive"},
		{Config{Command: []string{ok}, Timeout: -time.Second}, "timeout must be positive"},
		{Config{Command: []string{"no-such-program-privbo"}, Timeout: time.Second}, `program "no-such-program-privbo"`},
		{Config{Command: []string{notExec}, Timeout: time.Second}, "permission denied"},
		{Config{Command: []string{ok}, Timeout: time.Second, Dir: "/no/such/dir"}, "working directory"},
		{Config{Command: []string{ok}, Timeout: time.Second, Dir: ok}, "is not a directory"},
		{Config{Command: []string{ok}, Timeout: time.Second, Env: []string{"A=1", "B"}}, "environment entry 1"},
		{Config{Command: []string{ok}, Timeout: time.Second, Env: []string{"=x"}}, "environment entry 0"},
	}
	for _, tt := range tests {
		if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) error = %v, want one containing %q", tt.cfg, err, tt.want)
		}
	}
}

func TestEvaluateInputErrors(t *testing.T) {
	p := newProgram(t, "echo 1", 10*time.Second)
	for _, in := range []any{[]float64{1}, 3.0, "x", map[string]any{"f": func() {}}} {
		if _, err := p.Evaluate(context.Background(), in); err == nil {
			t.Errorf("Evaluate(%T) succeeded, want an error (input must be a JSON object)", in)
		}
	}
	// A struct encodes as an object.
	if got, err := p.Evaluate(context.Background(), struct{ Lambda float64 }{1}); err != nil || got != 1 {
		t.Errorf("Evaluate(struct) = %g, %v, want 1, nil", got, err)
	}
}

// TestEvaluateConcurrent runs several evaluations at once (with -race).
func TestEvaluateConcurrent(t *testing.T) {
	p := newProgram(t, `read -r line; v=$(printf '%s' "$line" | sed -n 's/.*"i":\([0-9]*\).*/\1/p'); echo "$v"`, 10*time.Second)
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			got, err := p.Evaluate(context.Background(), map[string]int{"i": i})
			if err == nil && got != float64(i) {
				err = errors.New("wrong score")
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Evaluate: %v", err)
		}
	}
}
