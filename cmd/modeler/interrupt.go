package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/study"
)

// signalCause is the cause of a run's context when a signal stopped it.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string { return "interrupted by " + signalName(c.sig) }

// signalName is "Ctrl-C (SIGINT)" or "SIGTERM".
func signalName(s os.Signal) string {
	if s == os.Interrupt {
		return "Ctrl-C (SIGINT)"
	}
	if s == syscall.SIGTERM {
		return "SIGTERM"
	}
	return s.String()
}

// cancelOnSignal cancels a run with a signalCause on its first SIGINT or SIGTERM, and
// then stops listening, so that a second signal ends the process at once (the study
// store's transactions make that safe). The returned function stops listening.
func cancelOnSignal(cancel context.CancelCauseFunc) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			signal.Stop(ch)
			cancel(signalCause{s})
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// interruptedError is the error of a run stopped by a signal: its message says what was
// kept and how to go on, and its exit status is 128 + the signal's number, as a shell
// reports a process a signal ended (130 for Ctrl-C).
type interruptedError struct {
	msg  string
	code int
	err  error
}

func (e *interruptedError) Error() string { return e.msg }
func (e *interruptedError) Unwrap() error { return e.err }
func (e *interruptedError) ExitCode() int { return e.code }

// interrupted turns the error of a run that a signal stopped (cancelOnSignal: ctx's
// cause) into an interruptedError saying what was kept — the study name and how many
// answers it stores, or that nothing was kept without --study — and how to resume; with
// asJSON it first prints the final JSON object, marked "interrupted": true, with what
// is known (res: the answers so far and the recommended row so far, if any; nil before
// the projection arrived). Other errors pass unchanged.
func interrupted(ctx context.Context, err error, res *modeler.Result, store *study.Store, name string, cfg modeler.Config, asJSON bool, stdout io.Writer) error {
	var cause signalCause
	if err == nil || !errors.As(context.Cause(ctx), &cause) {
		return err
	}
	if res == nil {
		res = &modeler.Result{Study: name, Direction: cfg.Direction.String(), Recommended: -1, BestIndex: -1,
			Queried: []int{}, Values: []float64{}, Batch: max(cfg.Batch, 1)}
	}
	res.Interrupted = true
	sig := signalName(cause.sig)
	var msg string
	if name != "" {
		kept := "its settings (no projection had arrived yet)"
		bg := context.WithoutCancel(ctx)
		if st, gerr := store.Get(bg, name); gerr == nil && st.Release != nil {
			obs, oerr := store.Observations(bg, name)
			if oerr != nil {
				return fmt.Errorf("interrupted by %s; reading study %s: %w", sig, name, oerr)
			}
			kept = fmt.Sprintf("its projection and %d of %d answers", len(obs), cfg.Iterations)
		}
		// What `modeler studies` shows as the reason the run stopped, in place of the
		// cancelled query's error.
		if serr := store.SetError(bg, name, fmt.Sprintf("interrupted by %s", sig)); serr != nil && !errors.Is(serr, study.ErrNotFound) {
			return fmt.Errorf("interrupted by %s; recording it in study %s: %w", sig, name, serr)
		}
		msg = fmt.Sprintf("interrupted by %s: study %s is kept with %s; `modeler run --study %s` resumes it (the curator replays what it already released, at no cost)",
			sig, name, kept, name)
	} else {
		msg = fmt.Sprintf("interrupted by %s after %d of %d answers: nothing was kept (no --study); run again to start over (the curator replays the projection and the answers it already released to this identity, at no cost), or pass --study NAME to keep a study that can be resumed",
			sig, res.Iterations, cfg.Iterations)
	}
	if res.Recommended >= 0 {
		msg += fmt.Sprintf("; recommended row so far: %d (posterior mean %.4g ± %.3g)", res.Recommended, res.RecommendedMean, res.RecommendedSD)
	}
	if asJSON {
		if err := json.NewEncoder(stdout).Encode(res); err != nil {
			return fmt.Errorf("%s; JSON result: %w", msg, err)
		}
	}
	code := 128 + 2 // SIGINT
	if s, ok := cause.sig.(syscall.Signal); ok {
		code = 128 + int(s)
	}
	return &interruptedError{msg: msg, code: code, err: err}
}
