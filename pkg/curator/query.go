package curator

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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
	// Clip is the range the value was clipped to before its noise (QueryOptions.Clip): the
	// public range unless the caller asked for a narrower one when the row was first
	// answered; zero for exact answers.
	Clip Clip
}

// Query answers the caller's index queries (docs/MATHS.md §2.3). Each index's evaluation is
// recorded once for the dataset (with observation noise if configured) and released to
// each caller once: a row asked again returns the stored answer at no cost. With
// private outputs the caller pays (ε, δ) once, before its first answer, for all of its
// answers (chargeAnswers explains why that is enough); with exact outputs nothing is
// charged, and ExactAnswerLimits apply. When the caller cannot afford the charge, or may
// not receive more exact answers, the request is refused before any evaluation. A query
// whose answers were all released to the caller before returns the balance this curator
// last read for the caller instead of reading the ledger again (it may lag charges made
// through another replica sharing the ledger). The balance is the feature-unit one:
// the answers are record-level releases, which count towards the feature-unit totals
// too, and with the same limits for both relations the feature-unit totals (which also
// hold the projections) are the ones that bind the next answer.
func (c *Curator) Query(ctx context.Context, identity string, indices []int) ([]Observation, ledger.Balance, error) {
	return c.QueryWith(ctx, identity, indices, QueryOptions{})
}

// QueryOptions are what a query may ask beyond its rows; the zero value is Query.
type QueryOptions struct {
	// Clip, when not zero, clips the fresh answers to this range inside the public
	// output range instead of the public range (Clip explains why that costs the same).
	Clip Clip
	// Pass ≥ 0 is the answering pass. Pass 0 is the identity's answers. A pass p ≥ 1 (at
	// most MaxPass) answers rows again with fresh noise, each row at most once in that
	// pass, and is paid by one charge of its own (chargePass): a confirmation of rows
	// already answered, at a declared extra cost.
	Pass int
}

// MaxPass is the highest answering pass (QueryOptions.Pass) a query may ask for.
const MaxPass = 16

// QueryWith is Query with opt. A clip range that is not inside the public range, a pass
// outside [0, MaxPass], or either asked of exact answers, is refused with
// ErrInvalidArgument before anything is evaluated or charged. Rows answered before in the
// same pass return their stored answer, with the range it was released with
// (Observation.Clip).
func (c *Curator) QueryWith(ctx context.Context, identity string, indices []int, opt QueryOptions) ([]Observation, ledger.Balance, error) {
	clip, err := c.out.clipFor(opt.Clip)
	if err != nil {
		return nil, ledger.Balance{}, fmt.Errorf("curator: %w", err)
	}
	pass := opt.Pass
	if pass < 0 || pass > MaxPass || (pass > 0 && c.out.exact()) {
		return nil, ledger.Balance{}, fmt.Errorf("curator: %w: answering pass %d: want 0, or 1 to %d with private answers (output privacy laplace or gaussian)", ErrInvalidArgument, pass, MaxPass)
	}
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
		if a, ok := c.answers[answerKey{identity, i, pass}]; ok {
			obs[p] = Observation{Index: i, Value: a.value, Replayed: true, Clip: a.clip}
		} else {
			fresh = append(fresh, p)
		}
	}
	c.mu.RUnlock()
	if len(fresh) > 0 {
		if err := c.answerFresh(ctx, identity, indices, fresh, obs, clip, pass); err != nil {
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

func (c *Curator) answerFresh(ctx context.Context, identity string, indices, fresh []int, obs []Observation, clip Clip, pass int) error {
	acct := c.account(identity)
	known := make(map[int]Observation, len(fresh))
	var unseen []int
	// Look up the ledger first: answers released before a restart are not cached yet.
	for _, p := range fresh {
		i := indices[p]
		if _, dup := known[i]; dup || slices.Contains(unseen, i) {
			continue
		}
		rec, ok, err := c.ledger.Get(ctx, acct, passQueryKey(i, pass))
		if err != nil {
			return fmt.Errorf("curator: %w", err)
		}
		if !ok {
			unseen = append(unseen, i)
			continue
		}
		a, err := c.decodeAnswer(rec.Result)
		if err != nil {
			return fmt.Errorf("curator: ledger record of %s: %w", passQueryKey(i, pass), err)
		}
		known[i] = Observation{Index: i, Value: a.value, Replayed: true, Clip: a.clip}
		c.cacheAnswer(identity, i, pass, a)
	}
	if len(unseen) > 0 {
		if c.out.exact() {
			giveBack, err := c.admitExact(ctx, identity, unseen)
			if err != nil {
				return err
			}
			var done []int
			defer func() { giveBack(done) }()
			for _, i := range unseen {
				o, err := c.releaseAnswer(ctx, identity, i, clip, 0)
				if err != nil {
					return err
				}
				done = append(done, i)
				known[i] = o
			}
		} else {
			if err := c.chargePass(ctx, identity, pass); err != nil {
				return fmt.Errorf("curator: %d new indices: %w", len(unseen), err)
			}
			for _, i := range unseen {
				o, err := c.releaseAnswer(ctx, identity, i, clip, pass)
				if err != nil {
					return err
				}
				known[i] = o
			}
		}
	}
	for _, p := range fresh {
		obs[p] = known[indices[p]]
	}
	return nil
}

// chargeAnswers charges identity (ε, δ) of the output mechanism once for all of its
// private answers under the current output setting, before the first of them is
// computed, with the neighbour relation AnswerRelation (ledger.RelationRecord: D and
// D' differ in one record j, replaced by any other record). Later answers are
// recorded at zero cost (for replay) and covered by this one charge:
//
//  1. Each answer depends on one record only. The answer to row i is
//     M_i(D) = clip(y_i, [lower, upper]) + noise, where y_i is the recorded evaluation of
//     row i: record i's target (EvaluateColumn), the operator's program on record i's
//     features (EvaluateProgram) or a person's evaluation of record i (EvaluateManual),
//     plus simulated observation noise drawn once per row independently of the data.
//     Replacing record j changes y_j only, and clip(y_j) by at most upper − lower, the
//     sensitivity the mechanism is calibrated to: M_j is (ε, δ)-DP and M_i for i ≠ j
//     has the same distribution under D and D'.
//  2. A row is answered at most once to an identity: a later request for it returns the
//     stored value (the answers cache, the ledger record query/I), which is
//     post-processing of that one answer.
//  3. The identity chooses its rows adaptively, from its projection and earlier
//     answers. Fix D and D' and everything the identity saw before its first answer.
//     Draw M_j(record j) up front — its noise is independent of when row j is asked —
//     and let a simulator that knows the common records (all but j) answer every other
//     row with fresh noise and hand over the pre-drawn M_j if row j is ever asked. The
//     simulator's output is distributed exactly as the identity's transcript under D
//     (resp. D'), and it is a post-processing of the single (ε, δ)-DP release M_j, so
//     the whole transcript of answers to one identity is (ε, δ)-DP under
//     RelationRecord however many rows it holds (Dwork & Roth 2014, Proposition 2.1,
//     post-processing): the adaptive form of parallel composition over disjoint parts
//     of the data (McSherry 2009, PINQ, Theorem 4).
//  4. Identities draw fresh noise for the same rows, so answers to several identities
//     compose sequentially: each identity pays (ε, δ) once, and the dataset cap sums
//     the identities' charges (Dwork & Roth 2014, Theorem 3.16).
//
// A clip range the identity asks for (QueryOptions.Clip) changes none of this: the answer
// to row i is then clip(y_i, [lo, hi]) + noise calibrated to hi − lo with [lo, hi]
// inside [lower, upper], so M_i is (ε, δ)-DP by step 1 with hi − lo in place of
// upper − lower, and a row is still answered once (step 2). The range is chosen by the
// identity from what it was released before, like the row itself, so M_j can no longer
// be drawn up front as in step 3; adaptive composition gives the same bound: for D and
// D' differing in record j, each answer other than row j's has the same distribution
// under both given everything released before it (it is 0-DP for this pair), and row
// j's answer is (ε, δ)-DP given everything released before it, whichever range was
// asked; by basic composition in the k-fold adaptive composition experiment (Dwork &
// Roth 2014, §3.5.2) the transcript is (0 + … + ε + … + 0, δ)-DP. The guarantee, and
// so the charge and its key, are the same.
//
// Not covered: a failed evaluation reports something exact about one row; each failure
// is charged on its own (chargeFailure). A changed output setting (mechanism, ε, δ or
// range) is a new charge key, so the identity pays again (conservative: answers under
// both settings cost at most the sum).
func (c *Curator) chargeAnswers(ctx context.Context, identity string) error {
	return c.chargePass(ctx, identity, 0)
}

// chargePass is chargeAnswers for answering pass p (QueryOptions.Pass): pass 0 is the
// identity's answers, each pass p ≥ 1 answers rows again with fresh noise and is paid by
// a charge of its own, with the same argument as above within the pass (each row at
// most once per pass); the passes compose sequentially (Dwork & Roth 2014, Theorem
// 3.16), so an identity that used P confirmation passes has paid (1 + P)·(ε, δ).
func (c *Curator) chargePass(ctx context.Context, identity string, p int) error {
	c.paidMu.Lock()
	paid := c.paid[paidKey{identity, p}]
	c.paidMu.Unlock()
	if paid {
		return nil
	}
	key := c.out.passChargeKey(p)
	unlock := c.locks.lock(identity + "\x00" + key)
	defer unlock()
	ch, err := c.unpaidPass(ctx, identity, p)
	if err != nil || ch == nil {
		return err
	}
	if err := c.ensureAffordable(ctx, identity, chargePart(*ch)); err != nil {
		return err
	}
	rec, err := c.ledger.Charge(ctx, *ch)
	if err != nil {
		return fmt.Errorf("curator: %w", err)
	}
	c.notePassPaid(identity, p, rec)
	return nil
}

// paidKey is an identity's answering pass (QueryOptions.Pass).
type paidKey struct {
	identity string
	pass     int
}

// unpaidAnswers returns the charge that pays identity's answers (see chargeAnswers), or
// nil when there is none to make: the answers are exact (they cost nothing), or the
// ledger already records the charge.
func (c *Curator) unpaidAnswers(ctx context.Context, identity string) (*ledger.Charge, error) {
	return c.unpaidPass(ctx, identity, 0)
}

// unpaidPass is unpaidAnswers for answering pass p.
func (c *Curator) unpaidPass(ctx context.Context, identity string, p int) (*ledger.Charge, error) {
	if c.out.exact() {
		return nil, nil
	}
	if paid, err := c.passPaid(ctx, identity, p); err != nil || paid {
		return nil, err
	}
	cost := c.out.cost()
	what := "all query answers of this identity"
	if p > 0 {
		what = fmt.Sprintf("confirmation pass %d of this identity (rows answered again with fresh noise, each at most once in this pass)", p)
	}
	return &ledger.Charge{
		Account: c.account(identity), Key: c.out.passChargeKey(p), Kind: ledger.KindQueryAnswers, Relation: AnswerRelation, Cost: cost,
		Description: fmt.Sprintf("%s (%s, ε=%g δ=%g per answer, range [%g, %g] or a narrower clip range inside it that the identity asks for, noise calibrated to the range's width): parallel composition over records",
			what, c.out.name(), cost.Epsilon, cost.Delta, c.out.cfg.Lower, c.out.cfg.Upper),
	}, nil
}

// answersPaid reports whether the ledger records identity's charge for its answers
// under the current output setting (and remembers it when it does).
func (c *Curator) answersPaid(ctx context.Context, identity string) (bool, error) {
	return c.passPaid(ctx, identity, 0)
}

// passPaid is answersPaid for answering pass p.
func (c *Curator) passPaid(ctx context.Context, identity string, p int) (bool, error) {
	c.paidMu.Lock()
	paid := c.paid[paidKey{identity, p}]
	c.paidMu.Unlock()
	if paid {
		return true, nil
	}
	_, ok, err := c.ledger.Get(ctx, c.account(identity), c.out.passChargeKey(p))
	if err != nil {
		return false, fmt.Errorf("curator: %w", err)
	}
	if ok {
		c.paidMu.Lock()
		c.paid[paidKey{identity, p}] = true
		c.paidMu.Unlock()
	}
	return ok, nil
}

// notePaid remembers that identity's answers are paid, by the charge rec.
func (c *Curator) notePaid(identity string, rec ledger.Receipt) {
	c.notePassPaid(identity, 0, rec)
}

func (c *Curator) notePassPaid(identity string, p int, rec ledger.Receipt) {
	if !rec.Replayed {
		c.log.Info("query answers charged", zap.String("identity", identity), zap.Int("pass", p),
			zap.Float64("epsilon", rec.Cost.Epsilon), zap.Float64("delta", rec.Cost.Delta))
	}
	c.paidMu.Lock()
	c.paid[paidKey{identity, p}] = true
	c.paidMu.Unlock()
}

// releaseAnswer evaluates row i and records its answer to identity, at no cost: a
// private answer is paid for by the identity's one charge (chargeAnswers), an exact one
// costs nothing because it protects nothing.
func (c *Curator) releaseAnswer(ctx context.Context, identity string, i int, clip Clip, pass int) (Observation, error) {
	key := passQueryKey(i, pass)
	unlock := c.locks.lock(identity + "\x00" + key)
	defer unlock()
	if a, ok := c.cachedAnswer(identity, i, pass); ok {
		return Observation{Index: i, Value: a.value, Replayed: true, Clip: a.clip}, nil
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
	v, err := c.out.release(y, clip)
	if err != nil {
		return Observation{}, fmt.Errorf("curator: %w", err)
	}
	a := releasedAnswer{value: v, clip: clip}
	desc := fmt.Sprintf("answer for row %d (%s; covered by the identity's query-answers charge)", i, c.out.name())
	if !c.out.exact() && clip != (Clip{c.out.cfg.Lower, c.out.cfg.Upper}) {
		desc = fmt.Sprintf("answer for row %d (%s, clipped to [%g, %g] inside the public range, noise calibrated to its width; covered by the identity's query-answers charge)",
			i, c.out.name(), clip.Lower, clip.Upper)
	}
	if pass > 0 {
		desc = strings.Replace(desc, "answer for row", fmt.Sprintf("confirmation pass %d: answer for row", pass), 1)
		desc = strings.Replace(desc, "query-answers charge", fmt.Sprintf("query-answers charge of pass %d", pass), 1)
	}
	var patient *ledger.PatientCost
	if c.out.exact() {
		// An exact answer has no whole-patient bound: the record says so.
		desc, patient = fmt.Sprintf("%s %d (output privacy none: not protected)", exactAnswerDescription, i), &ledger.Unbounded
	}
	rec, err := c.ledger.Charge(ctx, ledger.Charge{
		Account: c.account(identity), Key: key, Kind: ledger.KindQuery, Relation: ledger.RelationRecord,
		Result: c.encodeAnswer(a), Description: desc, Patient: patient,
	})
	if err != nil {
		return Observation{}, fmt.Errorf("curator: %w", err)
	}
	if rec.Replayed {
		if a, err = c.decodeAnswer(rec.Result); err != nil {
			return Observation{}, fmt.Errorf("curator: ledger record of %s: %w", key, err)
		}
	}
	c.cacheAnswer(identity, i, pass, a)
	return Observation{Index: i, Value: a.value, Replayed: rec.Replayed, Clip: a.clip}, nil
}

// chargeFailure charges a failed evaluation of row i like an answer when outputs are
// private: whether the operator's program fails on a row may depend on that row, and the
// caller learns it (docs/MATHS.md §7: charge errors that come after the data was touched).
// Each failure is a new release, so a caller retrying a failing row pays each time.
func (c *Curator) chargeFailure(identity string, i int) error {
	cost := c.out.cost()
	if cost == (ledger.Cost{}) {
		return nil
	}
	key := fmt.Sprintf("query-failure/%d/%d", i, time.Now().UnixNano())
	if _, err := c.ledger.Charge(context.Background(), ledger.Charge{Account: c.account(identity), Key: key, Kind: ledger.KindQueryFailure,
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
	rec, err := c.ledger.Charge(ctx, ledger.Charge{Account: acct, Key: key, Kind: ledger.KindEvaluation, Relation: ledger.RelationRecord,
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

// releasedAnswer is a released answer and the range it was clipped to (zero for exact answers).
type releasedAnswer struct {
	value float64
	clip  Clip
}

func (c *Curator) cacheAnswer(identity string, i, pass int, a releasedAnswer) {
	c.mu.Lock()
	c.answers[answerKey{identity, i, pass}] = a
	c.mu.Unlock()
}

func (c *Curator) cachedAnswer(identity string, i, pass int) (releasedAnswer, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	a, ok := c.answers[answerKey{identity, i, pass}]
	return a, ok
}

// encodeAnswer is the ledger record of an answer: its value alone (8 bytes) when it was
// clipped to the public range or is exact, as before clip ranges existed, or the value
// and its clip range (24 bytes) otherwise.
func (c *Curator) encodeAnswer(a releasedAnswer) []byte {
	b := encodeValue(a.value)
	if c.out.exact() || a.clip == (Clip{c.out.cfg.Lower, c.out.cfg.Upper}) {
		return b
	}
	return append(append(b, encodeValue(a.clip.Lower)...), encodeValue(a.clip.Upper)...)
}

// decodeAnswer reads a record written by encodeAnswer.
func (c *Curator) decodeAnswer(b []byte) (releasedAnswer, error) {
	if len(b) == 24 {
		v, _ := decodeValue(b[:8])
		lo, _ := decodeValue(b[8:16])
		hi, _ := decodeValue(b[16:])
		return releasedAnswer{value: v, clip: Clip{lo, hi}}, nil
	}
	v, err := decodeValue(b)
	if err != nil {
		return releasedAnswer{}, err
	}
	a := releasedAnswer{value: v}
	if !c.out.exact() {
		a.clip = Clip{c.out.cfg.Lower, c.out.cfg.Upper}
	}
	return a, nil
}

func queryKey(i int) string { return "query/" + strconv.Itoa(i) }

// passQueryKey is the ledger key of row i's answer in answering pass p: queryKey for
// pass 0, "query-pass/P/I" for a confirmation pass.
func passQueryKey(i, p int) string {
	if p == 0 {
		return queryKey(i)
	}
	return "query-pass/" + strconv.Itoa(p) + "/" + strconv.Itoa(i)
}

func encodeValue(v float64) []byte {
	return binary.LittleEndian.AppendUint64(nil, math.Float64bits(v))
}

func decodeValue(b []byte) (float64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("stored value has %d bytes, want 8", len(b))
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(b)), nil
}
