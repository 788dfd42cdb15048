package modeler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/privbo/privbo/pkg/study"
)

// RunStudy runs the study name of store against cur, creating it
// with cfg and conn if it does not exist and resuming it otherwise (see the package
// documentation). On resume cfg's settings (Config.Settings) must equal the stored ones,
// except Iterations, and conn's identity the stored identity. Before a stored study with
// a release runs again, the curator is asked, fail-fast, for its dataset: it must serve
// the release's dataset, with as many rows, and charge the identity that paid for the
// release. Only then do a changed address or file paths replace the stored ones. A different Iterations becomes the study's T if it is at
// least the number of iterations recorded: a larger T continues a finished study, a
// smaller one ends a stopped study sooner. The study is locked for the duration
// (study.ErrLocked if another process runs it). A finished study returns its result
// without contacting the curator.
func RunStudy(ctx context.Context, cur Curator, store *study.Store, name string,
	conn study.Connection, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	unlock, err := store.Lock(name)
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	defer unlock()
	st, err := store.Get(ctx, name)
	var q *Quote // the quote of a new study whose settings the curator completed
	if cfg.R == 0 || cfg.Epsilon == 0 || cfg.Delta == 0 {
		switch {
		case err == nil: // a stored study: what cfg leaves open is what it was created with
			fill := func(v *float64, stored float64) {
				if *v == 0 {
					*v = stored
				}
			}
			if cfg.R == 0 {
				cfg.R = st.Settings.R
			}
			fill(&cfg.Epsilon, st.Settings.Epsilon)
			fill(&cfg.Delta, st.Settings.Delta)
		case errors.Is(err, study.ErrNotFound):
			// A new study is stored with the values the curator quotes, before anything
			// is charged; a study it cannot pay is refused before it is created.
			info, ierr := datasetInfo(ctx, cur)
			if ierr != nil {
				return nil, ierr
			}
			if q, ierr = plan(ctx, cur, &cfg, info); ierr != nil {
				return nil, ierr
			}
		}
	}
	set, serr := cfg.Settings()
	if serr != nil {
		return nil, serr
	}
	if err := set.Validate(); err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	var resumed *Resume // nil for a new study
	if err == nil {
		resumed = &Resume{Study: name}
	}
	switch {
	case errors.Is(err, study.ErrNotFound):
		if st, err = store.Create(ctx, name, conn, set); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("modeler: %w", err)
	case st.Release == nil && sameReleaseRequest(st, set, conn):
		// No release stored: the study was refused before its projection arrived (a bad
		// initial index, too many iterations) or lost it on the way. It asks for the
		// same release, which the curator replays at no cost if it was charged, so
		// nothing learnt is lost by taking the other settings as if the study were new.
		if err := store.Reset(ctx, name, conn, set); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
		if st, err = store.Get(ctx, name); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
		resumed = nil
	default:
		same := set
		same.Iterations = st.Settings.Iterations // compared below
		if diff := st.Settings.Diff(same); len(diff) > 0 {
			return nil, fmt.Errorf("modeler: study %s was created with other settings (%s); give the stored ones or none to resume, or start a new study",
				name, strings.Join(diff, "; "))
		}
		if conn.Identity != st.Connection.Identity {
			return nil, fmt.Errorf("modeler: study %s runs as identity %q, not %q (answers and budget belong to an identity)",
				name, st.Connection.Identity, conn.Identity)
		}
		if set.Iterations != st.Settings.Iterations && st.Release != nil {
			if err := checkRows(set.Iterations, st.Release.Rows, set.AllowRepeats); err != nil {
				return nil, err
			}
		}
		// Nothing is changed in the store until the curator is known to be the one the
		// study ran against: a finished study left as it is needs no curator at all.
		if st.Release != nil && (!st.Done || set.Iterations != st.Settings.Iterations) {
			if err := verifyCurator(ctx, cur, st, conn.Curator); err != nil {
				return nil, err
			}
		}
		if set.Iterations != st.Settings.Iterations {
			if err := store.SetIterations(ctx, name, set.Iterations); err != nil {
				return nil, fmt.Errorf("modeler: %w", err)
			}
			resumed.PreviousIterations = st.Settings.Iterations
			if st, err = store.Get(ctx, name); err != nil {
				return nil, fmt.Errorf("modeler: %w", err)
			}
		}
		if conn != st.Connection {
			if err := store.SetConnection(ctx, name, conn); err != nil {
				return nil, fmt.Errorf("modeler: %w", err)
			}
		}
	}
	res, err := runStudy(ctx, cur, store, st, cfg, resumed, q)
	if err != nil {
		// Keep the reason for `modeler studies`, even when ctx was cancelled.
		store.SetError(context.WithoutCancel(ctx), name, err.Error()) //nolint:errcheck // err is the one to report
		return res, err
	}
	return res, nil
}

// sameReleaseRequest reports whether set and conn ask for the release st asked for: the
// same r, ε, δ and label, charged to the same identity.
func sameReleaseRequest(st *study.Study, set study.Settings, conn study.Connection) bool {
	s := st.Settings
	return s.R == set.R && s.Epsilon == set.Epsilon && s.Delta == set.Delta && s.Label == set.Label &&
		st.Connection.Identity == conn.Identity
}

// runStudy runs st, new or resumed (resumed holds what RunStudy knows of the resume; q
// is the quote of a new study whose settings the curator completed, nil otherwise).
func runStudy(ctx context.Context, cur Curator, store *study.Store, st *study.Study, cfg Config, resumed *Resume, q *Quote) (*Result, error) {
	start := time.Now()
	fetched := st.Release == nil
	var z []float64
	budget := st.Budget
	var rauto *AutoRChoice
	if st.Release == nil {
		info, proj, fq, err := fetchRelease(ctx, cur, &cfg, q)
		if err != nil {
			return nil, err
		}
		q, rauto = fq, rAuto(fq)
		rel := releaseOf(info, proj, cfg)
		if err := store.SaveRelease(ctx, st.Name, rel, proj.Z); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
		st.Release, z, budget = &rel, proj.Z, proj.Budget
	} else {
		var err error
		if z, err = store.LoadZ(st); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
	}
	rel := st.Release
	s, err := newSession(cfg, cur, z, rel.Rows, rel.Cols, rel.OutputPrivacy, rel.NoiseSD)
	if err != nil {
		return nil, err
	}
	s.res.Study, s.res.Dataset, s.res.ReleaseID = st.Name, rel.Dataset, rel.ID
	s.res.Quote, s.res.RAuto = q, rauto
	s.res.Protection = protectionOf(rel)
	s.budget = budget
	prior, err := store.Observations(ctx, st.Name)
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	if err := s.replay(prior); err != nil {
		return nil, fmt.Errorf("%w (replaying study %s)", err, st.Name)
	}
	replayed := len(prior)
	if resumed != nil && cfg.Resumed != nil {
		resumed.Iterations, resumed.Rebuild, resumed.Projection = replayed, time.Since(start), fetched
		cfg.Resumed(*resumed)
	}
	initial := st.InitialIndex
	if initial < 0 {
		if initial, err = initialIndex(cfg.InitialIndex, rel.Rows); err != nil {
			return nil, err
		}
		if err := store.SetInitialIndex(ctx, st.Name, initial); err != nil {
			return nil, fmt.Errorf("modeler: %w", err)
		}
	}
	if !st.Done {
		err = s.loop(ctx, initial, func(obs []study.Observation, b study.Budget) error {
			if err := store.Record(ctx, st.Name, obs, b); err != nil {
				return fmt.Errorf("modeler: %w", err)
			}
			return nil
		})
		if err != nil {
			return s.finish(), err // what is known so far, for a caller that reports an interruption
		}
		if err := s.confirm(ctx); err != nil {
			return s.finish(), err
		}
		if err := store.Finish(ctx, st.Name); err != nil {
			return s.finish(), fmt.Errorf("modeler: %w", err)
		}
	}
	return s.finish(), nil
}

// replay conditions the GP on recorded answers round by round, as they came, so that
// refits fall where they fell.
func (s *session) replay(prior []study.Observation) error {
	for len(prior) > 0 {
		k := 1
		for k < len(prior) && prior[k].Round == prior[0].Round {
			k++
		}
		if err := s.observeRound(prior[:k], nil, nil); err != nil {
			return err
		}
		prior = prior[k:]
	}
	return nil
}

// Replay is the result of the stored study st with the answers obs (store.Observations),
// rebuilt without the curator: the GP of its settings over the stored Z, conditioned on
// every answer as a resumed run would be, and its recommendation (Result.Recommended).
// It is what `modeler report` shows; the budget is the one recorded at the last contact.
// A study without a release (nothing answered yet) has no result: ErrNoRelease.
func Replay(store *study.Store, st *study.Study, obs []study.Observation) (*Result, error) {
	rel := st.Release
	if rel == nil {
		return nil, fmt.Errorf("modeler: study %s: %w", st.Name, ErrNoRelease)
	}
	cfg, err := ConfigFromSettings(st.Settings)
	if err != nil {
		return nil, err
	}
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	z, err := store.LoadZ(st)
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	s, err := newSession(cfg, nil, z, rel.Rows, rel.Cols, rel.OutputPrivacy, rel.NoiseSD)
	if err != nil {
		return nil, err
	}
	s.res.Study, s.res.Dataset, s.res.ReleaseID = st.Name, rel.Dataset, rel.ID
	s.res.Protection = protectionOf(rel)
	s.budget = st.Budget
	if err := s.replay(obs); err != nil {
		return nil, fmt.Errorf("%w (replaying study %s)", err, st.Name)
	}
	return s.finish(), nil
}

// Recommendation is r's recommended row and answer noise, as the study report shows them
// (study.WriteReport).
func (r *Result) Recommendation() *study.Recommendation {
	return &study.Recommendation{Index: r.Recommended, Mean: r.RecommendedMean, SD: r.RecommendedSD, AnswerNoiseSD: r.AnswerNoiseSD}
}

// ErrNoRelease is returned for a stored study that has not received its projection.
var ErrNoRelease = errors.New("no projection received yet")

// verifyCurator checks, before a stored study with a release is resumed, that the
// curator cur (at addr) serves the dataset the release came from, with as many
// rows, and charges this connection as the identity that paid for the release: another
// curator's answers would silently mix another dataset into the study, and another
// identity's budget would pay for it. It asks fail-fast (Curator.DatasetInfo), so that a
// wrong address or wrong TLS files are reported at once rather than waited for.
func verifyCurator(ctx context.Context, cur Curator, st *study.Study, addr string) error {
	info, err := datasetInfo(ctx, cur)
	if err != nil {
		return fmt.Errorf("%w (resuming study %s against %s)", err, st.Name, addr)
	}
	rel := st.Release
	if rel.DatasetID != "" && info.DatasetID != rel.DatasetID {
		return fmt.Errorf("modeler: study %s runs on dataset id %q, but the curator at %s serves dataset id %q; resume it against the curator it was started with",
			st.Name, rel.DatasetID, addr, info.DatasetID)
	}
	if info.Name != rel.Dataset || info.Rows != rel.Rows {
		return fmt.Errorf("modeler: study %s runs on dataset %q of %d rows, but the curator at %s serves %q of %d rows; resume it against the curator it was started with",
			st.Name, rel.Dataset, rel.Rows, addr, info.Name, info.Rows)
	}
	want := rel.Identity
	if want == "" { // a release stored before the identity was kept with it
		want = st.Budget.Identity
	}
	if got := info.Budget.Identity; want != "" && got != want {
		return fmt.Errorf("modeler: study %s is paid for by identity %q, but the curator at %s charges this connection to %q; resume it with the study's certificate or token",
			st.Name, want, addr, got)
	}
	return nil
}
