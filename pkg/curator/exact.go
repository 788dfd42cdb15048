package curator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/privbo/privbo/pkg/dp/answer"
	"github.com/privbo/privbo/pkg/ledger"
)

// ExactAnswerLimits restrict exact answers (output privacy "none"), which are not a
// private release at all: every one of them reveals one record's value as it is.
type ExactAnswerLimits struct {
	// MaxRows is the most distinct rows of the dataset answered exactly, to all
	// identities together: what is revealed exactly cannot be revealed less by being
	// told to several identities, and identities are cheap to come by, so a cap per
	// identity would bound nothing (n identities read n times the cap). A query that
	// would go beyond it is refused (rows already answered to the identity are
	// replayed at no cost; a row answered to another identity does not count again).
	// 0: no limit.
	MaxRows int
	// RequireProjection refuses exact answers to identities that hold no projection
	// release: a study needs the projection first, and a caller that only queries is
	// reading the target column.
	RequireProjection bool
}

// Errors of refused exact answers.
var (
	// ErrNeedProjection: the identity holds no projection release.
	ErrNeedProjection = errors.New("exact answers need a projection release first")
	// ErrExactRowLimit: the dataset reached the cap on distinct rows answered exactly.
	ErrExactRowLimit = errors.New("exact-answer row limit reached")
)

// ExactRowLimitError is the refusal of exact answers past the cap on distinct rows per
// identity (ExactAnswerLimits.MaxRowsPerIdentity); it matches ErrExactRowLimit.
type ExactRowLimitError struct {
	// Identity asked for the rows.
	Identity string
	// Limit is the cap on distinct rows of the dataset answered exactly, to all
	// identities together; Answered the distinct rows answered so far, Requested the
	// new rows the query asked for.
	Limit, Answered, Requested int
}

func (e *ExactRowLimitError) Error() string {
	return fmt.Sprintf("curator: %v: this curator releases exact, unprotected answers (output privacy none) for at most %d distinct rows of the dataset, "+
		"to all identities together; %d have been answered and the query asks for %d more (rows already answered to the caller are replayed at no cost)",
		ErrExactRowLimit, e.Limit, e.Answered, e.Requested)
}

// Unwrap makes the error match ErrExactRowLimit.
func (e *ExactRowLimitError) Unwrap() error { return ErrExactRowLimit }

// checkExact refuses settings New does not accept for exact answers.
func checkExact(cfg Config) error {
	if cfg.ExactAnswers.MaxRows < 0 {
		return fmt.Errorf("curator: the exact-answer row limit must be ≥ 0, got %d", cfg.ExactAnswers.MaxRows)
	}
	exact := answer.IsExact(cfg.Output.Mechanism)
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
}

// exactRows is what this process knows of the rows answered exactly on the dataset.
type exactRows struct {
	loaded bool
	rows   map[int]bool // answered, or reserved by a request in flight
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
// answers for rows, which it was never answered, and reserves those the dataset never
// answered exactly to anyone. The returned function gives back the reservations of
// the rows not in done (rows that failed). The rows come from the ledger once per
// process, then from this process's releases: replicas sharing one ledger each enforce
// the cap on what they know, so together they may exceed it by what the others
// released since.
func (c *Curator) admitExact(ctx context.Context, identity string, rows []int) (func(done []int), error) {
	lim := c.cfg.ExactAnswers
	if !lim.RequireProjection && lim.MaxRows == 0 {
		return func([]int) {}, nil
	}
	unlock := c.locks.lock("exact")
	defer unlock()
	c.exactMu.Lock()
	st := c.exact[identity]
	if st == nil {
		st = &exactState{}
		c.exact[identity] = st
	}
	load := !st.loaded || (lim.RequireProjection && !st.projection) || !c.exactRows.loaded
	c.exactMu.Unlock()
	if load {
		// The ledger is read again while no projection is known: another replica may
		// have released it.
		proj, answered, err := c.exactHistory(ctx, identity)
		if err != nil {
			return nil, err
		}
		c.exactMu.Lock()
		st.projection = st.projection || proj
		st.loaded = true
		if !c.exactRows.loaded {
			c.exactRows.rows, c.exactRows.loaded = answered, true
		}
		c.exactMu.Unlock()
	}
	c.exactMu.Lock()
	defer c.exactMu.Unlock()
	if lim.RequireProjection && !st.projection {
		return nil, fmt.Errorf("curator: %w: this curator releases exact, unprotected answers (output privacy none), and only to identities that hold a projection release; "+
			"identity %q holds none: request the projection first (ReleaseProjection), then query", ErrNeedProjection, identity)
	}
	var fresh []int
	for _, i := range rows {
		if !c.exactRows.rows[i] && !slices.Contains(fresh, i) {
			fresh = append(fresh, i)
		}
	}
	if m := lim.MaxRows; m > 0 && len(c.exactRows.rows)+len(fresh) > m {
		return nil, &ExactRowLimitError{Identity: identity, Limit: m, Answered: len(c.exactRows.rows), Requested: len(fresh)}
	}
	for _, i := range fresh {
		c.exactRows.rows[i] = true
	}
	return func(done []int) {
		c.exactMu.Lock()
		defer c.exactMu.Unlock()
		for _, i := range fresh {
			if !slices.Contains(done, i) {
				delete(c.exactRows.rows, i)
			}
		}
	}, nil
}

// exactHistory reads from the ledger whether identity holds a projection release and
// which rows were answered exactly, to any identity.
func (c *Curator) exactHistory(ctx context.Context, identity string) (projection bool, rows map[int]bool, err error) {
	entries, err := c.ledger.Entries(ctx, c.cfg.DatasetID)
	if err != nil {
		return false, nil, fmt.Errorf("curator: %w", err)
	}
	rows = make(map[int]bool)
	for _, e := range entries {
		switch {
		case e.Kind == ledger.KindProjection && e.Identity == identity:
			projection = true
		case e.Kind == ledger.KindQuery && (e.Patient.Unbounded || strings.HasPrefix(e.Description, exactAnswerDescription)):
			if i, ok := queryIndex(e.Key); ok {
				rows[i] = true
			}
		}
	}
	return projection, rows, nil
}

// exactAnswerDescription opens the ledger description of an exact answer's record.
const exactAnswerDescription = "exact answer for row"

// queryIndex is the row of a query record's key (queryKey), and false if key is not one.
func queryIndex(key string) (int, bool) {
	rest, ok := strings.CutPrefix(key, "query/")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}
