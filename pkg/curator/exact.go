package curator

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/privbo/privbo/pkg/ledger"
)

// ExactAnswerLimits restrict exact answers (output privacy "none"), which are not a
// private release at all: every one of them reveals one record's value as it is.
type ExactAnswerLimits struct {
	// MaxRowsPerIdentity is the most distinct rows answered to one identity; a query
	// that would go beyond it is refused (rows already answered are replayed at no
	// cost). 0: no limit.
	MaxRowsPerIdentity int
	// RequireProjection refuses exact answers to identities that hold no projection
	// release: a study needs the projection first, and a caller that only queries is
	// reading the target column.
	RequireProjection bool
}

// Errors of refused exact answers.
var (
	// ErrNeedProjection: the identity holds no projection release.
	ErrNeedProjection = errors.New("exact answers need a projection release first")
	// ErrExactRowLimit: the identity reached the cap on distinct rows answered.
	ErrExactRowLimit = errors.New("exact-answer row limit reached")
)

// ExactRowLimitError is the refusal of exact answers past the cap on distinct rows per
// identity (ExactAnswerLimits.MaxRowsPerIdentity); it matches ErrExactRowLimit.
type ExactRowLimitError struct {
	Identity string
	// Limit is the cap; Answered the distinct rows this identity has received, Requested
	// the new rows it asked for.
	Limit, Answered, Requested int
}

func (e *ExactRowLimitError) Error() string {
	return fmt.Sprintf("curator: %v: this curator releases exact, unprotected answers (output privacy none) for at most %d distinct rows per identity; "+
		"identity %q has received %d and asked for %d more (rows already answered are replayed at no cost)", ErrExactRowLimit, e.Limit, e.Identity, e.Answered, e.Requested)
}

// Unwrap makes the error match ErrExactRowLimit.
func (e *ExactRowLimitError) Unwrap() error { return ErrExactRowLimit }

// checkExact refuses settings New does not accept for exact answers.
func checkExact(cfg Config) error {
	if cfg.ExactAnswers.MaxRowsPerIdentity < 0 {
		return fmt.Errorf("curator: the exact-answer row limit must be ≥ 0, got %d", cfg.ExactAnswers.MaxRowsPerIdentity)
	}
	exact := cfg.Output.normalised().Mechanism == "none"
	if exact && cfg.Evaluation.mode() == EvaluateProgram && !cfg.AllowExactProgramAnswers {
		return errors.New("curator: program evaluation with output privacy none would release exact functions of each queried record's features, " +
			"which the projection is meant to protect; choose Config.Output.Mechanism laplace or gaussian, or set Config.AllowExactProgramAnswers to accept it explicitly")
	}
	return nil
}

// exactState is what this process knows of one identity's exact answers.
type exactState struct {
	loaded     bool
	projection bool
	rows       int // distinct rows answered (records query/I), reserved ones included
}

// noteProjection records that identity holds a projection release.
func (c *Curator) noteProjection(identity string) {
	c.exactMu.Lock()
	defer c.exactMu.Unlock()
	if st := c.exact[identity]; st != nil {
		st.projection = true
	}
}

// admitExact checks, before anything is evaluated, that identity may receive exact
// answers for n rows it was never answered, and reserves them. The returned function
// gives back the reservations not used (rows that failed, or that a concurrent request
// released first). The counts come from the ledger once per identity and process, then
// from this process's releases: replicas sharing one ledger each enforce the limit on
// what they know, so together they may exceed it by what the others released since.
func (c *Curator) admitExact(ctx context.Context, identity string, n int) (func(used int), error) {
	lim := c.cfg.ExactAnswers
	if !lim.RequireProjection && lim.MaxRowsPerIdentity == 0 {
		return func(int) {}, nil
	}
	unlock := c.locks.lock("exact\x00" + identity)
	defer unlock()
	c.exactMu.Lock()
	st := c.exact[identity]
	if st == nil {
		st = &exactState{}
		c.exact[identity] = st
	}
	load := !st.loaded || (lim.RequireProjection && !st.projection)
	c.exactMu.Unlock()
	if load {
		// The ledger is read again while no projection is known: another replica may
		// have released it.
		proj, rows, err := c.exactHistory(ctx, identity)
		if err != nil {
			return nil, err
		}
		c.exactMu.Lock()
		st.projection = st.projection || proj
		if !st.loaded {
			st.rows, st.loaded = rows, true
		}
		c.exactMu.Unlock()
	}
	c.exactMu.Lock()
	defer c.exactMu.Unlock()
	if lim.RequireProjection && !st.projection {
		return nil, fmt.Errorf("curator: %w: this curator releases exact, unprotected answers (output privacy none), and only to identities that hold a projection release; "+
			"identity %q holds none: request the projection first (ReleaseProjection), then query", ErrNeedProjection, identity)
	}
	if m := lim.MaxRowsPerIdentity; m > 0 && st.rows+n > m {
		return nil, &ExactRowLimitError{Identity: identity, Limit: m, Answered: st.rows, Requested: n}
	}
	st.rows += n
	return func(used int) {
		c.exactMu.Lock()
		st.rows -= n - used
		c.exactMu.Unlock()
	}, nil
}

// exactHistory reads from the ledger whether identity holds a projection release and
// how many distinct rows were answered to it.
func (c *Curator) exactHistory(ctx context.Context, identity string) (projection bool, rows int, err error) {
	entries, err := c.ledger.Entries(ctx, c.cfg.DatasetID)
	if err != nil {
		return false, 0, fmt.Errorf("curator: %w", err)
	}
	for _, e := range entries {
		if e.Identity != identity {
			continue
		}
		switch {
		case e.Kind == ledger.KindProjection:
			projection = true
		case strings.HasPrefix(e.Key, "query/"):
			rows++
		}
	}
	return projection, rows, nil
}
