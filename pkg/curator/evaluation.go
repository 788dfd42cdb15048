package curator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/evaluator"
	"github.com/privbo/privbo/pkg/ledger"
)

// How a row's objective f(x_i) is evaluated (docs/MATHS.md §2.3).
const (
	// EvaluateColumn reads the dataset's target column (replays and benchmarks).
	EvaluateColumn = "column"
	// EvaluateProgram runs the operator's program once per row: the row index and its
	// features (raw units, by column name) as JSON on stdin, a number on stdout.
	EvaluateProgram = "program"
	// EvaluateManual waits for a person: the row is listed as pending (curator pending)
	// until its value is recorded (curator record); the query waits meanwhile.
	EvaluateManual = "manual"
)

// Evaluation configures how rows are evaluated.
type Evaluation struct {
	Mode    string
	Command []string      // EvaluateProgram
	Timeout time.Duration // EvaluateProgram; default 1 minute
	// Poll is how often a waiting query looks for a recorded value (EvaluateManual);
	// default 250 ms.
	Poll time.Duration
}

func (e Evaluation) mode() string {
	if e.Mode == "" {
		return EvaluateColumn
	}
	return e.Mode
}

// Evaluation keys in the ledger, under the curator's own account: "evaluation/I" holds
// the recorded value of row I, "pending/I" marks a row waiting for a person.
func evaluationKey(i int) string { return "evaluation/" + strconv.Itoa(i) }
func pendingKey(i int) string    { return "pending/" + strconv.Itoa(i) }

// ErrEvaluation marks a row whose evaluation failed (the program timed out or printed
// no number). Its details are in the operator's log.
var ErrEvaluation = errors.New("evaluation failed")

func newProgram(e Evaluation) (*evaluator.Program, error) {
	switch e.mode() {
	case EvaluateColumn, EvaluateManual:
		return nil, nil
	case EvaluateProgram:
		if len(e.Command) == 0 {
			return nil, errors.New("curator: program evaluation needs a command")
		}
		t := e.Timeout
		if t <= 0 {
			t = DefaultEvaluationTimeout
		}
		p, err := evaluator.New(evaluator.Config{Command: e.Command, Timeout: t})
		if err != nil {
			return nil, fmt.Errorf("curator: evaluation program: %w", err)
		}
		return p, nil
	}
	return nil, fmt.Errorf("curator: unknown evaluation mode %q (want column, program or manual)", e.Mode)
}

// runProgram evaluates row i with the operator's program, on the row's raw values as
// the data file holds them (dataset.Dataset.RawRow). They cannot be rebuilt from the
// scaled row as X·Scale + Offset: the private scalings clamp each column to its bounds
// and clip the row's norm, so a clamped or clipped row would come back changed.
func (c *Curator) runProgram(ctx context.Context, i int) (float64, error) {
	raw := c.ds.RawRow(i)
	features := make(map[string]float64, c.ds.D)
	for j, name := range c.ds.Features {
		features[name] = raw[j]
	}
	y, err := c.program.Evaluate(ctx, map[string]any{"index": i, "features": features})
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		c.logProgramFailure(i, err)
		return 0, fmt.Errorf("curator: %w for row %d; the curator's operator can find details in its log", ErrEvaluation, i)
	}
	return y, nil
}

// logProgramFailure tells the operator that the evaluation of row i failed, without the
// program's output: the program reads the row on standard input and its standard error
// (a crash trace, a debug print) may well repeat it, and the log never receives a data
// row (Config.Logger). Only the kind of failure, the exit status, the duration and the
// size of standard error are logged; the message says how to see the rest.
func (c *Curator) logProgramFailure(i int, err error) {
	fields := []zap.Field{zap.Int("row", i)}
	var ee *evaluator.Error
	if !errors.As(err, &ee) {
		// Not a run of the program (the input could not be encoded): no program output.
		c.log.Error("evaluation program not run", append(fields, zap.Error(err))...)
		return
	}
	kind := "not started"
	switch {
	case errors.Is(err, evaluator.ErrTimeout):
		kind = "timeout"
	case errors.Is(err, evaluator.ErrExit):
		kind = "non-zero exit"
	case errors.Is(err, evaluator.ErrBadOutput):
		kind = "bad output"
	}
	fields = append(fields, zap.String("failure", kind), zap.String("exit_status", ee.ExitStatus),
		zap.Duration("duration", ee.Elapsed), zap.Int64("stderr_bytes", ee.StderrSize))
	if kind == "not started" {
		// A start error (permission denied, a missing interpreter) names the program, never the row.
		fields = append(fields, zap.String("reason", ee.Msg))
	}
	c.log.Error("evaluation program failed; its stderr is not logged because it may contain the row. "+
		"To debug, run the program by hand on a test row: echo '{\"index\": 0, \"features\": {...}}' | PROGRAM", fields...)
}

// awaitRecorded marks row i pending (durably, once) and waits until a value for it is
// recorded or ctx ends. A restart of either side loses nothing: the pending mark and
// any recorded value are in the ledger, and a repeated query waits again.
func (c *Curator) awaitRecorded(ctx context.Context, i int) (float64, error) {
	acct := c.account(CuratorIdentity)
	if _, err := c.ledger.Charge(ctx, ledger.Charge{Account: acct, Key: pendingKey(i), Kind: ledger.KindPending, Relation: ledger.RelationRecord,
		Description: "row waiting for a recorded evaluation"}); err != nil {
		return 0, fmt.Errorf("curator: marking row %d pending: %w", i, err)
	}
	c.log.Info("evaluation pending; record it with 'curator record'", zap.Int("row", i))
	poll := c.cfg.Evaluation.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for {
		rec, ok, err := c.ledger.Get(ctx, acct, evaluationKey(i))
		if err != nil {
			return 0, fmt.Errorf("curator: %w", err)
		}
		if ok {
			return decodeValue(rec.Result)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
}

// RecordEvaluation records the value of row i of dataset in store, as a person does
// with 'curator record' for a pending row. Recording the same value again is a no-op;
// recording a different value for a row already recorded is refused.
func RecordEvaluation(ctx context.Context, store Ledger, dataset string, i int, value float64) error {
	acct := ledger.Account{Dataset: dataset, Identity: CuratorIdentity}
	rec, err := store.Charge(ctx, ledger.Charge{Account: acct, Key: evaluationKey(i), Kind: ledger.KindEvaluation, Relation: ledger.RelationRecord,
		Result: encodeValue(value), Description: "evaluation recorded by the operator"})
	if err != nil {
		return fmt.Errorf("curator: recording row %d: %w", i, err)
	}
	if rec.Replayed {
		if old, _ := decodeValue(rec.Result); old != value {
			return fmt.Errorf("curator: row %d was already recorded with another value; recorded values are final", i)
		}
	}
	return nil
}

// PendingEvaluations lists the rows of dataset waiting for a recorded value.
func PendingEvaluations(ctx context.Context, store Records, dataset string) ([]int, error) {
	entries, err := store.Entries(ctx, dataset)
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	pending, done := map[int]bool{}, map[int]bool{}
	for _, e := range entries {
		if e.Identity != CuratorIdentity {
			continue
		}
		if s, ok := strings.CutPrefix(e.Key, "pending/"); ok {
			if i, err := strconv.Atoi(s); err == nil {
				pending[i] = true
			}
		} else if s, ok := strings.CutPrefix(e.Key, "evaluation/"); ok {
			if i, err := strconv.Atoi(s); err == nil {
				done[i] = true
			}
		}
	}
	var out []int
	for i := range pending {
		if !done[i] {
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out, nil
}
