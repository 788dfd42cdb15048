package curator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/ledger"
)

// OrphanGrace is how long a stored release matrix may go without a ledger record that
// names it before RemoveOrphans removes it. A release stores its matrix before it
// charges it (docs/DESIGN.md, "The release protocol"), so a matrix a live curator —
// this one or a replica sharing its ledger — is storing or about to charge has no
// record yet: the window must exceed the longest time from the start of a matrix's
// store to its charge's commit, which the request's deadline bounds (a few minutes for
// the largest releases, see docs/EXPERIMENTS.md) and, once releases reserve their cost
// before computing, the reservation's timeout. An hour leaves a wide margin; the cost of
// waiting is only disk.
const OrphanGrace = time.Hour

// releaseBlob matches the names the curator gives the matrices it stores
// (ReleaseProjection: the release id and a random nonce). RemoveOrphans touches no
// other name.
var releaseBlob = regexp.MustCompile(`^proj-[0-9a-f]{24}-[0-9a-f]{16}\.f64$`)

// ReleaseStore is a store of release matrices and where it is, for the log.
type ReleaseStore struct {
	Where string
	Store blob.Store
}

// Orphan is a removed release matrix: its name, size and age, never its content.
type Orphan struct {
	Where string
	Name  string
	Size  int64
	Age   time.Duration
}

// RemoveOrphans removes from each store (those that can list their blobs, blob.Lister)
// the release matrices that no projection record of the ledger names, in any dataset
// (replicas of several datasets may share a PostgreSQL schema, and a state directory
// may have served several dataset ids), and that were written more than grace ago:
// what a curator killed between storing a matrix and charging it leaves behind. It
// reads the stores before the ledger, so a matrix charged meanwhile is seen charged.
// Each removal is logged with the matrix's name and size. It charges nothing and
// changes no record.
func RemoveOrphans(ctx context.Context, led ResultLister, grace time.Duration, log *zap.Logger, stores ...ReleaseStore) ([]Orphan, error) {
	if log == nil {
		log = zap.NewNop()
	}
	now := time.Now()
	type candidate struct {
		store int
		info  blob.Info
	}
	var cands []candidate
	for i, s := range stores {
		l, ok := s.Store.(blob.Lister)
		if !ok {
			continue
		}
		infos, err := l.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("curator: orphaned releases: %w", err)
		}
		for _, in := range infos {
			if releaseBlob.MatchString(in.Name) && now.Sub(in.Created) > grace {
				cands = append(cands, candidate{i, in})
			}
		}
	}
	if len(cands) == 0 {
		return nil, nil
	}
	named, err := recordedMatrices(ctx, led)
	if err != nil {
		return nil, fmt.Errorf("curator: orphaned releases: %w", err)
	}
	var out []Orphan
	var errs []error
	for _, c := range cands {
		if named[c.info.Name] {
			continue
		}
		s := stores[c.store]
		if err := s.Store.Delete(ctx, c.info.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		o := Orphan{Where: s.Where, Name: c.info.Name, Size: c.info.Size, Age: now.Sub(c.info.Created)}
		out = append(out, o)
		log.Info("removed an orphaned release matrix (stored, never charged)", zap.String("store", o.Where), zap.String("name", o.Name),
			zap.Int64("bytes", o.Size), zap.Duration("age", o.Age.Round(time.Second)))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("curator: removing orphaned releases: %w", errors.Join(errs...))
	}
	return out, nil
}

// recordedMatrices is the set of the matrix names the projection records of every
// dataset of the ledger name, read in one query of the projection records' results
// (ledger.Ledger.KindResults): not the records of other kinds, nor a Get per record.
func recordedMatrices(ctx context.Context, led ResultLister) (map[string]bool, error) {
	named := map[string]bool{}
	err := led.KindResults(ctx, ledger.KindProjection, func(a ledger.Account, key string, result []byte) error {
		var pr projectionRecord
		if json.Unmarshal(result, &pr) != nil || pr.File == "" {
			// A record that cannot be read may name any matrix: remove none.
			return fmt.Errorf("ledger record %s of %s on %s is unreadable; no matrix removed", key, a.Identity, a.Dataset)
		}
		named[pr.File] = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return named, nil
}
