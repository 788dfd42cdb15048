package ledger

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// StoredQuota bounds the bytes the releases of a dataset keep for replay
// (Charge.Stored): each identity's, and the dataset's over all identities. A
// reservation that stores bytes is checked against it as against a budget,
// counting the releases recorded and those being computed (Hold.Stored); zero
// means no bound.
type StoredQuota struct {
	PerIdentity, Dataset int64
}

// ErrStoredBytes is wrapped by every *StoredBytesError.
var ErrStoredBytes = errors.New("ledger: the stored-bytes quota cannot hold the release")

// StoredBytesError refuses a reservation whose releases would store more than
// a quota allows. Nothing was recorded.
type StoredBytesError struct {
	Scope   string // ScopeIdentity or ScopeDataset
	Account Account
	// Requested is what the refused releases would store; Stored what the
	// recorded releases of the scope store, Reserved what those being computed
	// will, and Quota the bound.
	Requested, Stored, Reserved, Quota int64
}

func (e *StoredBytesError) Error() string {
	who := fmt.Sprintf("identity %q on dataset %q", e.Account.Identity, e.Account.Dataset)
	if e.Scope == ScopeDataset {
		who = fmt.Sprintf("dataset %q (release by identity %q)", e.Account.Dataset, e.Account.Identity)
	}
	return fmt.Sprintf("ledger: stored-bytes quota reached for %s: the release would store %s for replay, "+
		"beside %s stored and %s held by releases being computed, over the quota of %s; releases already made are still replayed at no cost",
		who, FormatBytes(e.Requested), FormatBytes(e.Stored), FormatBytes(e.Reserved), FormatBytes(e.Quota))
}

func (e *StoredBytesError) Is(target error) bool { return target == ErrStoredBytes }

// FormatBytes writes n bytes for people, in powers of 1024, to 4 significant
// digits.
func FormatBytes(n int64) string {
	v, units := float64(n), []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for ; v >= 1024 && i < len(units)-1; i++ {
		v /= 1024
	}
	return fmt.Sprintf("%.4g %s", v, units[i])
}

// StoredRow is what the recorded releases of an identity (or of the dataset,
// Identity empty) store for replay, and what reservations will.
type StoredRow struct {
	Identity                  string
	Bytes, Releases, Reserved int64
}

func (s *Ledger) storedQueries() {
	s.qStoredAdd = s.d.SQL(`INSERT INTO {t}stored_totals AS t (dataset, identity, bytes, releases) VALUES (?, ?, ?, ?)
		ON CONFLICT (dataset, identity) DO UPDATE SET bytes = t.bytes + excluded.bytes, releases = t.releases + excluded.releases`)
	s.qStoredAll = s.d.SQL(`SELECT identity, bytes, releases FROM {t}stored_totals WHERE dataset = ? ORDER BY identity`)
}

// checkStored checks the fresh charges of b against quota: for each identity,
// then for the dataset, what the recorded releases and the live reservations (rt)
// store plus what the fresh charges would.
func (s *Ledger) checkStored(ctx context.Context, q Querier, b *batch, rt *datasetTotals, quota StoredQuota) error {
	add, whos := map[string]int64{}, []string{}
	for _, i := range b.fresh {
		add[b.cs[i].Identity] += b.cs[i].Stored
		add[datasetRow] += b.cs[i].Stored
		whos = append(whos, b.cs[i].Identity)
	}
	if add[datasetRow] == 0 || quota == (StoredQuota{}) {
		return nil
	}
	stored, err := s.storedRows(ctx, q, b.dataset)
	if err != nil {
		return err
	}
	for _, who := range append(whos, datasetRow) {
		scope, limit, a := ScopeIdentity, quota.PerIdentity, Account{Dataset: b.dataset, Identity: who}
		if who == datasetRow {
			scope, limit, a = ScopeDataset, quota.Dataset, b.cs[b.fresh[0]].Account
		}
		if have, res := stored[who].Bytes, rt.stored[who]; limit > 0 && add[who] > 0 && have+res+add[who] > limit {
			return &StoredBytesError{Scope: scope, Account: a, Requested: add[who], Stored: have, Reserved: res, Quota: limit}
		}
	}
	return nil
}

// storedRows reads the stored-bytes totals of dataset, by identity (datasetRow:
// the dataset's).
func (s *Ledger) storedRows(ctx context.Context, q Querier, dataset string) (map[string]StoredRow, error) {
	out := map[string]StoredRow{}
	err := EachRow(ctx, q, s.qStoredAll, []any{dataset}, func(scan func(...any) error) error {
		var r StoredRow
		if err := scan(&r.Identity, &r.Bytes, &r.Releases); err != nil {
			return err
		}
		if r.Bytes < 0 || r.Releases < 0 {
			return fmt.Errorf("ledger: corrupt stored-bytes total %d of %d releases", r.Bytes, r.Releases)
		}
		out[r.Identity] = r
		return nil
	})
	if err != nil {
		return nil, wrap("read stored bytes", err)
	}
	return out, nil
}

// writeStored adds what the fresh charges of b store to the totals of their
// identities and of the dataset.
func (s *Ledger) writeStored(ctx context.Context, q Querier, b *batch) error {
	for _, i := range b.fresh {
		c := b.cs[i]
		if c.Stored == 0 {
			continue
		}
		for _, who := range []string{c.Identity, datasetRow} {
			if _, err := q.Exec(ctx, s.qStoredAdd, c.Dataset, who, c.Stored, 1); err != nil {
				return fmt.Errorf("ledger: charge: update stored bytes: %w", err)
			}
		}
	}
	return nil
}

// Stored returns what the releases of dataset store for replay, and what its
// live reservations will: the dataset's row first (Identity empty), then each
// identity's, sorted.
func (s *Ledger) Stored(ctx context.Context, dataset string) ([]StoredRow, error) {
	if err := checkName("dataset", dataset); err != nil {
		return nil, err
	}
	var rows map[string]StoredRow
	err := s.e.Read(ctx, func(q Querier) error {
		rt, _, err := s.liveReservations(ctx, q, dataset, time.Now().UnixNano(), nil)
		if err != nil {
			return err
		}
		if rows, err = s.storedRows(ctx, q, dataset); err != nil {
			return err
		}
		for who, n := range rt.stored {
			r := rows[who]
			r.Reserved = n
			rows[who] = r
		}
		return nil
	})
	if err != nil {
		return nil, wrap("stored", err)
	}
	out := make([]StoredRow, 0, len(rows)+1)
	for who, r := range rows {
		r.Identity = who
		out = append(out, r)
	}
	if _, ok := rows[datasetRow]; !ok {
		out = append(out, StoredRow{})
	}
	slices.SortFunc(out, func(a, b StoredRow) int { return strings.Compare(a.Identity, b.Identity) })
	return out, nil
}

// verifyStored compares the stored-bytes totals of dataset with the sums of its
// records, as Verify does the other totals: read before and after the records, and
// reported only when both readings agree.
func (s *Ledger) verifyStored(ctx context.Context, q Querier, dataset string) ([]Inconsistency, error) {
	before, err := s.storedRows(ctx, q, dataset)
	if err != nil {
		return nil, err
	}
	want := map[string]StoredRow{}
	err = EachRow(ctx, q, s.d.SQL(`SELECT identity, SUM(stored_bytes), COUNT(*) FROM {t}entries
		WHERE dataset = ? AND stored_bytes > 0 GROUP BY identity`), []any{dataset}, func(scan func(...any) error) error {
		var r StoredRow
		if err := scan(&r.Identity, &r.Bytes, &r.Releases); err != nil {
			return err
		}
		ds := want[datasetRow]
		ds.Bytes, ds.Releases = ds.Bytes+r.Bytes, ds.Releases+r.Releases
		want[r.Identity], want[datasetRow] = r, ds
		return nil
	})
	if err != nil {
		return nil, err
	}
	after, err := s.storedRows(ctx, q, dataset)
	if err != nil {
		return nil, err
	}
	if !maps.Equal(before, after) {
		return nil, fmt.Errorf("ledger: verify: dataset %q was charged while it was read; verify again", dataset)
	}
	var out []Inconsistency
	text := func(r StoredRow) string { return fmt.Sprintf("%d bytes over %d releases", r.Bytes, r.Releases) }
	whos := slices.Collect(maps.Keys(after))
	for who := range want {
		if _, ok := after[who]; !ok {
			whos = append(whos, who)
		}
	}
	slices.Sort(whos)
	for _, who := range whos {
		if g, w := after[who], want[who]; g.Bytes != w.Bytes || g.Releases != w.Releases {
			name := "stored bytes, identity " + who
			if who == datasetRow {
				name = "stored bytes, dataset"
			}
			out = append(out, Inconsistency{What: name, Stored: text(g), Recomputed: text(w)})
		}
	}
	return out, nil
}
