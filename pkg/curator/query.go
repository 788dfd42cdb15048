package curator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/ledger"
)

// Observation is one answer to an index query.
type Observation struct {
	Index int
	Value float64
	// Replayed is true when this value had been released to the caller before.
	Replayed bool
}

// Query answers the caller's index queries (SPEC §2.2). Each index's evaluation is
// recorded once for the dataset (with observation noise if configured); each distinct
// index released to a caller is charged once under the output-privacy setting and later
// returns the stored value at no cost. When the caller cannot afford every new index in
// the request, the request is refused before any evaluation. A query whose answers were
// all released to the caller before returns the balance this curator last read for the
// caller instead of reading the ledger again (it may lag charges made through another
// replica sharing the ledger). The balance is the feature-unit one: the answers are
// record-level releases, which count towards the feature-unit totals too, and with the
// same limits for both relations the feature-unit totals (which also hold the
// projections) are the ones that bind the next answer.
func (c *Curator) Query(ctx context.Context, identity string, indices []int) ([]Observation, ledger.Balance, error) {
	if len(indices) == 0 {
		return nil, ledger.Balance{}, fmt.Errorf("curator: %w: a query needs at least one index", ErrInvalidArgument)
	}
	if len(indices) > c.cfg.MaxQueryIndices {
		return nil, ledger.Balance{}, fmt.Errorf("curator: %w: %d indices in one query; the maximum is %d", ErrInvalidArgument, len(indices), c.cfg.MaxQueryIndices)
	}
	for _, i := range indices {
		if i < 0 || i >= c.ds.N {
			return nil, ledger.Balance{}, fmt.Errorf("curator: %w: index %d is out of range [0, %d)", ErrInvalidArgument, i, c.ds.N)
		}
	}
	obs := make([]Observation, len(indices))
	var fresh []int // positions in indices not yet released to this caller
	c.mu.RLock()
	for p, i := range indices {
		if v, ok := c.answers[answerKey{identity, i}]; ok {
			obs[p] = Observation{Index: i, Value: v, Replayed: true}
		} else {
			fresh = append(fresh, p)
		}
	}
	c.mu.RUnlock()
	if len(fresh) > 0 {
		if err := c.answerFresh(ctx, identity, indices, fresh, obs); err != nil {
			return nil, ledger.Balance{}, err
		}
	} else if bal, ok := c.lastBalance(identity, ledger.RelationFeatureUnit); ok {
		// Every answer was cached: nothing was charged, so the balance read after the
		// last release still stands (up to charges made elsewhere; see lastBalance).
		return obs, bal, nil
	}
	bal, err := c.Balance(ctx, identity, ledger.RelationFeatureUnit)
	if err != nil {
		return nil, ledger.Balance{}, err
	}
	return obs, bal, nil
}

func (c *Curator) answerFresh(ctx context.Context, identity string, indices, fresh []int, obs []Observation) error {
	acct := c.account(identity)
	known := make(map[int]Observation, len(fresh))
	var unseen []int
	// Look up the ledger first: answers released before a restart are not cached yet.
	for _, p := range fresh {
		i := indices[p]
		if _, dup := known[i]; dup || slices.Contains(unseen, i) {
			continue
		}
		rec, ok, err := c.ledger.Get(ctx, acct, queryKey(i))
		if err != nil {
			return fmt.Errorf("curator: %w", err)
		}
		if !ok {
			unseen = append(unseen, i)
			continue
		}
		v, err := decodeValue(rec.Result)
		if err != nil {
			return fmt.Errorf("curator: ledger record of %s: %w", queryKey(i), err)
		}
		known[i] = Observation{Index: i, Value: v, Replayed: true}
		c.cacheAnswer(identity, i, v)
	}
	cost := c.out.cost()
	total := ledger.Cost{Epsilon: cost.Epsilon * float64(len(unseen)), Delta: cost.Delta * float64(len(unseen))}
	if err := c.ensureAffordable(ctx, identity, ledger.RelationRecord, total); err != nil {
		return fmt.Errorf("curator: %d new indices: %w", len(unseen), err)
	}
	for _, i := range unseen {
		o, err := c.releaseAnswer(ctx, identity, i)
		if err != nil {
			return err
		}
		known[i] = o
	}
	for _, p := range fresh {
		obs[p] = known[indices[p]]
	}
	return nil
}

func (c *Curator) releaseAnswer(ctx context.Context, identity string, i int) (Observation, error) {
	key := queryKey(i)
	unlock := c.locks.lock(identity + "\x00" + key)
	defer unlock()
	if v, ok := c.cachedAnswer(identity, i); ok {
		return Observation{Index: i, Value: v, Replayed: true}, nil
	}
	y, err := c.evaluate(ctx, i)
	if err != nil {
		if errors.Is(err, ErrEvaluation) {
			if cerr := c.chargeFailure(identity, i); cerr != nil {
				return Observation{}, cerr // the failure is not revealed uncharged
			}
		}
		return Observation{}, err
	}
	v, err := c.out.release(y)
	if err != nil {
		return Observation{}, fmt.Errorf("curator: %w", err)
	}
	rec, err := c.ledger.Charge(ctx, ledger.Charge{
		Account: c.account(identity), Key: key, Kind: "query", Relation: ledger.RelationRecord, Cost: c.out.cost(),
		Result: encodeValue(v), Description: fmt.Sprintf("answer for row %d (%s)", i, c.out.name()),
	})
	if err != nil {
		return Observation{}, fmt.Errorf("curator: %w", err)
	}
	if rec.Replayed {
		if v, err = decodeValue(rec.Result); err != nil {
			return Observation{}, fmt.Errorf("curator: ledger record of %s: %w", key, err)
		}
	}
	c.cacheAnswer(identity, i, v)
	return Observation{Index: i, Value: v, Replayed: rec.Replayed}, nil
}

// chargeFailure charges a failed evaluation of row i like an answer when outputs are
// private: whether the operator's program fails on a row may depend on that row, and the
// caller learns it (DP_REFERENCE §5: charge errors that come after the data was touched).
// Each failure is a new release, so a caller retrying a failing row pays each time.
func (c *Curator) chargeFailure(identity string, i int) error {
	cost := c.out.cost()
	if cost == (ledger.Cost{}) {
		return nil
	}
	key := fmt.Sprintf("query-failure/%d/%d", i, time.Now().UnixNano())
	if _, err := c.ledger.Charge(context.Background(), ledger.Charge{Account: c.account(identity), Key: key, Kind: "query-failure",
		Relation: ledger.RelationRecord, Cost: cost, Description: fmt.Sprintf("failed evaluation of row %d reported (%s)", i, c.out.name())}); err != nil {
		c.log.Error("charging a failed evaluation", zap.Int("row", i), zap.String("identity", identity), zap.Error(err))
		return fmt.Errorf("curator: %w", err)
	}
	return nil
}

// evaluate returns row i's recorded evaluation, evaluating and recording it durably the
// first time so that every later request, and every caller, sees the same value. With a
// dataset column, Gaussian observation noise (NoiseSD) is added once; a program's or a
// person's value is recorded as it is.
func (c *Curator) evaluate(ctx context.Context, i int) (float64, error) {
	c.mu.RLock()
	y, ok := c.evals[i]
	c.mu.RUnlock()
	if ok {
		return y, nil
	}
	acct := c.account(CuratorIdentity)
	key := evaluationKey(i)
	if rec, ok, err := c.ledger.Get(ctx, acct, key); err != nil {
		return 0, fmt.Errorf("curator: %w", err)
	} else if ok {
		return c.cacheEvaluation(i, rec.Result)
	}
	if c.cfg.Evaluation.mode() == EvaluateManual {
		// Waiting for a person: no lock is held, so other rows and other callers go on.
		y, err := c.awaitRecorded(ctx, i)
		if err != nil {
			return 0, err
		}
		return c.cacheEvaluation(i, encodeValue(y))
	}
	unlock := c.locks.lock(key)
	defer unlock()
	if rec, ok, err := c.ledger.Get(ctx, acct, key); err != nil {
		return 0, fmt.Errorf("curator: %w", err)
	} else if ok {
		return c.cacheEvaluation(i, rec.Result)
	}
	switch c.cfg.Evaluation.mode() {
	case EvaluateProgram:
		var err error
		if y, err = c.runProgram(ctx, i); err != nil {
			return 0, err
		}
	default:
		y = c.ds.Y[i]
		if c.cfg.NoiseSD > 0 {
			y += c.cfg.NoiseSD * c.normal()
		}
	}
	rec, err := c.ledger.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: "evaluation", Relation: ledger.RelationRecord,
		Result: encodeValue(y), Description: "recorded evaluation of one row (not a release)"})
	if err != nil {
		return 0, fmt.Errorf("curator: recording evaluation of row %d: %w", i, err)
	}
	return c.cacheEvaluation(i, rec.Result)
}

func (c *Curator) cacheEvaluation(i int, stored []byte) (float64, error) {
	y, err := decodeValue(stored)
	if err != nil {
		return 0, fmt.Errorf("curator: recorded evaluation of row %d: %w", i, err)
	}
	c.mu.Lock()
	c.evals[i] = y
	c.mu.Unlock()
	return y, nil
}

func (c *Curator) normal() float64 {
	c.noiseMu.Lock()
	defer c.noiseMu.Unlock()
	return c.noise()
}

func (c *Curator) cacheAnswer(identity string, i int, v float64) {
	c.mu.Lock()
	c.answers[answerKey{identity, i}] = v
	c.mu.Unlock()
}

func (c *Curator) cachedAnswer(identity string, i int) (float64, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	v, ok := c.answers[answerKey{identity, i}]
	return v, ok
}

func queryKey(i int) string { return "query/" + strconv.Itoa(i) }

func encodeValue(v float64) []byte {
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
}

func decodeValue(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("stored value has %d bytes, want 8", len(b))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}
