package curator

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/ledger"
)

// IdentityResults is what the ledger records of one modeler identity's studies on a
// dataset: its projection releases and the rows it was answered, in the order the
// ledger committed them. The ledger cannot tell the identity's studies apart: answers
// belong to the identity, not to a release (a row asked again by a second study is a
// replay of the first answer, with no record of its own).
type IdentityResults struct {
	Identity    string
	Projections []ProjectionRecord
	Rows        []AnsweredRow
}

// ProjectionRecord is one projection release as the ledger recorded it: the release id
// the modeler received (its study's release id) and the charge's description.
type ProjectionRecord struct {
	ReleaseID   string    `json:"release_id"`
	Time        time.Time `json:"time"`
	Description string    `json:"description"`
}

// AnsweredRow is one row answered to an identity.
type AnsweredRow struct {
	Index int
	// Answer is the value released to the identity: with output privacy, the clipped
	// value plus noise.
	Answer float64
	// Time is when the answer was committed to the ledger.
	Time time.Time
	// Pass is the answering pass (QueryOptions.Pass): 0 for the study's answers, p ≥ 1
	// for a confirmation pass that answered the row again.
	Pass int
}

// Results reads, from the ledger alone, what every modeler identity of dataset was
// released: its projections and its answered rows, identities in the order of their
// first record. It is for the curator's operator (`curator results`): it reads what the
// curator recorded, releases nothing and costs no privacy budget. The curator's own
// records (evaluations, pending marks, the scaling estimate) are left out; see
// Evaluations.
func Results(ctx context.Context, store Records, dataset string) ([]IdentityResults, error) {
	entries, err := store.Entries(ctx, dataset)
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	var out []IdentityResults
	at := map[string]int{}
	of := func(identity string) *IdentityResults {
		k, ok := at[identity]
		if !ok {
			k = len(out)
			at[identity] = k
			out = append(out, IdentityResults{Identity: identity})
		}
		return &out[k]
	}
	for _, e := range entries {
		if ledger.IsReserved(e.Identity) {
			continue
		}
		switch e.Kind {
		case ledger.KindProjection:
			r := of(e.Identity)
			r.Projections = append(r.Projections, ProjectionRecord{ReleaseID: strings.TrimPrefix(e.Key, "projection/"), Time: e.Created.UTC(), Description: e.Description})
		case ledger.KindQuery:
			i, ok := rowOfKey(e.Key, "query/")
			pass := 0
			if rest, isPass := strings.CutPrefix(e.Key, "query-pass/"); isPass {
				p, row, _ := strings.Cut(rest, "/")
				var err error
				if pass, err = strconv.Atoi(p); err == nil && pass > 0 {
					i, ok = rowOfKey(row, "")
				}
			}
			if !ok {
				return nil, fmt.Errorf("curator: ledger record %q of %s is not a row's answer", e.Key, e.Identity)
			}
			rec, found, err := store.Get(ctx, e.Account, e.Key)
			if err != nil {
				return nil, fmt.Errorf("curator: %w", err)
			}
			if !found {
				return nil, fmt.Errorf("curator: ledger record %q of %s vanished while it was read", e.Key, e.Identity)
			}
			b := rec.Result
			if len(b) == 24 { // an answer with its clip range (encodeAnswer): the value first
				b = b[:8]
			}
			v, err := decodeValue(b)
			if err != nil {
				return nil, fmt.Errorf("curator: ledger record %q of %s: %w", e.Key, e.Identity, err)
			}
			r := of(e.Identity)
			r.Rows = append(r.Rows, AnsweredRow{Index: i, Answer: v, Time: e.Created.UTC(), Pass: pass})
		}
	}
	return out, nil
}

// Evaluations returns the recorded evaluation of every row of dataset the curator has
// evaluated (for any identity): the target column's value (plus the simulated
// observation noise, if configured), the operator's program's output, or the value a
// person recorded. Like Results it only reads the ledger.
func Evaluations(ctx context.Context, store Records, dataset string) (map[int]float64, error) {
	entries, err := store.Entries(ctx, dataset)
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	out := map[int]float64{}
	for _, e := range entries {
		if e.Identity != CuratorIdentity || e.Kind != ledger.KindEvaluation {
			continue
		}
		i, ok := rowOfKey(e.Key, "evaluation/")
		if !ok {
			continue
		}
		rec, found, err := store.Get(ctx, e.Account, e.Key)
		if err != nil {
			return nil, fmt.Errorf("curator: %w", err)
		}
		if !found {
			continue
		}
		v, err := decodeValue(rec.Result)
		if err != nil {
			return nil, fmt.Errorf("curator: ledger record %q: %w", e.Key, err)
		}
		out[i] = v
	}
	return out, nil
}

// rowOfKey is the row index of a ledger key prefix + "I".
func rowOfKey(key, prefix string) (int, bool) {
	s, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(s)
	return i, err == nil && i >= 0
}

// Ranking ranks rows by their true outcome among a set of outcomes (every row of the
// data file, or the rows evaluated so far), in a direction: rank 1 is the best, ties
// share the best rank. It is `curator results`' and the console's rule.
type Ranking struct {
	sorted   []float64
	maximize bool
	// TopOnePercent is the outcome a row must reach to be in the top 1%: the 99th
	// percentile in the direction (linear interpolation, numpy's default; 0 without
	// outcomes).
	TopOnePercent float64
}

// NewRanking ranks among values, the highest first when maximize is set.
func NewRanking(values map[int]float64, maximize bool) Ranking {
	r := Ranking{sorted: make([]float64, 0, len(values)), maximize: maximize}
	for _, v := range values {
		r.sorted = append(r.sorted, v)
	}
	sort.Float64s(r.sorted)
	if len(r.sorted) > 0 {
		r.TopOnePercent = quantile(r.sorted, 0.99)
		if !maximize {
			r.TopOnePercent = quantile(r.sorted, 0.01)
		}
	}
	return r
}

// N is the number of outcomes ranked among.
func (r Ranking) N() int { return len(r.sorted) }

// Rank is v's rank (1 + the outcomes strictly better), the share of outcomes no better
// than it, and whether it is in the top 1%.
func (r Ranking) Rank(v float64) (rank int, percentile float64, top bool) {
	n := len(r.sorted)
	if r.maximize {
		rank = 1 + n - sort.Search(n, func(i int) bool { return r.sorted[i] > v })
		top = v >= r.TopOnePercent
	} else {
		rank = 1 + sort.SearchFloat64s(r.sorted, v)
		top = v <= r.TopOnePercent
	}
	return rank, float64(n-rank+1) / float64(n), top
}

// quantile is the q-quantile of sorted values, interpolated linearly between order
// statistics (numpy's default; simulate.TopOnePercentThreshold for q = 0.99).
func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (pos-float64(lo))*(sorted[lo+1]-sorted[lo])
}
