package evaluator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Sentinel errors for errors.Is; every failed evaluation is an *Error
// wrapping one of them (or the context's error, or an I/O error starting
// the program).
var (
	ErrTimeout   = errors.New("evaluator: timed out")
	ErrBadOutput = errors.New("evaluator: bad output")
	ErrExit      = errors.New("evaluator: program failed")
)

// Output limits.
const (
	MaxOutput     = 1 << 20  // bytes of standard output accepted
	MaxStderr     = 64 << 10 // bytes of standard error kept (the last ones)
	stderrInError = 1 << 10  // bytes of standard error quoted in an error
	waitDelay     = time.Second
)

// Config describes the operator's program.
type Config struct {
	// Command is the argv: Command[0] is a program name looked up in PATH
	// or a path (a relative path with a slash is taken relative to Dir).
	Command []string
	// Timeout bounds one evaluation; it must be positive.
	Timeout time.Duration
	// Dir is the working directory; empty means the curator's.
	Dir string
	// Env is the complete environment as "KEY=value" entries; nil means the
	// curator's own environment (the os/exec convention).
	Env []string
}

// Program is a validated Config, safe for concurrent Evaluate calls.
type Program struct {
	path string // absolute path of Command[0]
	args []string
	cfg  Config
}

// New validates cfg: a non-empty Command whose program exists and is
// executable, a positive Timeout, an existing directory Dir (if set) and
// Env entries of the form KEY=value.
func New(cfg Config) (*Program, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("evaluator: command is empty")
	}
	if cfg.Timeout <= 0 {
		return nil, fmt.Errorf("evaluator: timeout must be positive, got %v", cfg.Timeout)
	}
	if cfg.Dir != "" {
		st, err := os.Stat(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("evaluator: working directory: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("evaluator: working directory %q is not a directory", cfg.Dir)
		}
	}
	for i, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("evaluator: environment entry %d is not KEY=value", i)
		}
	}
	name := cfg.Command[0]
	if strings.ContainsRune(name, filepath.Separator) && !filepath.IsAbs(name) && cfg.Dir != "" {
		name = filepath.Join(cfg.Dir, name)
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("evaluator: program %q: %w", cfg.Command[0], err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, fmt.Errorf("evaluator: program %q: %w", cfg.Command[0], err)
	}
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Env = slices.Clone(cfg.Env)
	return &Program{path: path, args: cfg.Command[1:], cfg: cfg}, nil
}

// Error is a failed evaluation. Its text includes the end of the program's
// standard error, for the operator; see the package documentation. A caller
// whose program reads data rows must not log that text: ExitStatus, Elapsed
// and StderrSize describe the failure without any program output.
type Error struct {
	Err    error  // ErrTimeout, ErrBadOutput, ErrExit, a context error or a start error
	Msg    string // what went wrong, without program output
	Stderr string // the last MaxStderr bytes of standard error
	// ExitStatus is how the program ended ("exit status 2", "signal: killed"),
	// empty if it did not start or did not end.
	ExitStatus string
	// Elapsed is how long the program ran.
	Elapsed time.Duration
	// StderrSize is the number of bytes the program wrote to standard error,
	// including those beyond the MaxStderr kept in Stderr.
	StderrSize int64
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("evaluator: ")
	b.WriteString(e.Msg)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		if len(s) > stderrInError {
			s = "…" + s[len(s)-stderrInError:]
		}
		fmt.Fprintf(&b, "; stderr: %q", s)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Evaluate runs the program once with input, marshalled by encoding/json
// (it must encode as a JSON object), on standard input and returns the
// score it prints. See the package documentation for the protocol and the
// errors.
func (p *Program) Evaluate(ctx context.Context, input any) (float64, error) {
	in, err := json.Marshal(input)
	if err != nil {
		return 0, fmt.Errorf("evaluator: encoding input: %w", err)
	}
	if len(in) == 0 || in[0] != '{' {
		return 0, fmt.Errorf("evaluator: input must encode as a JSON object, got %T", input)
	}
	if err := ctx.Err(); err != nil {
		return 0, &Error{Err: err, Msg: "not started: " + err.Error()}
	}
	runCtx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()

	cmd := exec.CommandContext(runCtx, p.path, p.args...)
	cmd.Args[0] = p.cfg.Command[0]
	cmd.Dir = p.cfg.Dir
	cmd.Env = p.cfg.Env
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	stdout := &headBuffer{max: MaxOutput}
	stderr := &tailBuffer{max: MaxStderr}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = waitDelay
	setProcessGroup(cmd)

	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start)
	fail := func(kind error, format string, args ...any) (float64, error) {
		e := &Error{Err: kind, Msg: fmt.Sprintf(format, args...), Stderr: stderr.String(), Elapsed: elapsed, StderrSize: stderr.total}
		if cmd.ProcessState != nil {
			e.ExitStatus = cmd.ProcessState.String()
		}
		return 0, e
	}
	switch {
	case ctx.Err() != nil:
		return fail(ctx.Err(), "cancelled after %v: %v", elapsed.Round(time.Millisecond), ctx.Err())
	case runErr != nil && runCtx.Err() != nil:
		return fail(ErrTimeout, "%s did not finish within the timeout of %v (killed)", p.cfg.Command[0], p.cfg.Timeout)
	case errors.Is(runErr, exec.ErrWaitDelay):
		killProcessGroup(cmd)
		return fail(ErrBadOutput, "%s exited but a background process kept its output open (killed)", p.cfg.Command[0])
	case runErr != nil:
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return fail(ErrExit, "%s failed: %v", p.cfg.Command[0], ee.ProcessState)
		}
		return fail(runErr, "running %s: %v", p.cfg.Command[0], runErr)
	case stdout.overflow:
		return fail(ErrBadOutput, "%s printed more than %d bytes", p.cfg.Command[0], MaxOutput)
	}
	score, err := parseScore(stdout.Bytes())
	if err != nil {
		return fail(ErrBadOutput, "%s: %v", p.cfg.Command[0], err)
	}
	return score, nil
}

// parseScore reads {"score": x} or a bare number x from the output.
func parseScore(out []byte) (float64, error) {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return 0, errors.New(`no output, want {"score": <number>}`)
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if bytes.Contains(out, []byte("NaN")) || bytes.Contains(out, []byte("Infinity")) {
			return 0, errors.New("output is not JSON: NaN and Infinity are not JSON numbers, the score must be finite")
		}
		return 0, fmt.Errorf(`output is not JSON (%v), want {"score": <number>}`, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return 0, errors.New("output has more than one JSON value, want one")
	}
	var num json.Number
	switch v := v.(type) {
	case json.Number:
		num = v
	case map[string]any:
		s, ok := v["score"]
		if !ok {
			return 0, errors.New(`output has no "score" field`)
		}
		if num, ok = s.(json.Number); !ok {
			return 0, fmt.Errorf(`"score" is %s, want a number`, jsonKind(s))
		}
	default:
		return 0, fmt.Errorf(`output is %s, want {"score": <number>} or a number`, jsonKind(v))
	}
	x, err := strconv.ParseFloat(num.String(), 64)
	if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
		return 0, errors.New("score is outside the float64 range")
	}
	return x, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

// headBuffer keeps the first max bytes written and notes whether more came;
// it never fails a write, so the program is not blocked on a full pipe. (It
// must not embed bytes.Buffer: io.Copy would use Buffer.ReadFrom and bypass
// the limit.)
type headBuffer struct {
	buf      []byte
	max      int
	overflow bool
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.max - len(b.buf); len(p) > room {
		b.overflow = true
		b.buf = append(b.buf, p[:max(room, 0)]...)
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *headBuffer) Bytes() []byte { return b.buf }

// tailBuffer keeps the last max bytes written and counts all of them.
type tailBuffer struct {
	buf   []byte
	max   int
	total int64
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return n, nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return n, nil
}

func (b *tailBuffer) String() string { return string(b.buf) }
