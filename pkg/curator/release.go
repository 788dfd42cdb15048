package curator

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/projection"
)

// ProjectionRequest asks for the private projection of Kharkovskii et al. (2020),
// Algorithm 1, or its Gaussian variant (docs/MATHS.md §2.1).
type ProjectionRequest struct {
	R              int
	Epsilon, Delta float64
	// Label distinguishes independent releases with equal parameters.
	Label string
	// WithAnswers pays the identity's answers (its one charge for all of them,
	// chargeAnswers) with the projection, in one ledger transaction: both are charged
	// or neither is, so a study never holds a projection it cannot query. Without it
	// the projection is charged alone (and the answers with the first query). Exact
	// answers cost nothing, so with output privacy "none" it changes nothing.
	WithAnswers bool
}

// Projection is a stored, charged release of Z (n × r).
type Projection struct {
	ID         string
	Rows, Cols int
	// Replayed is true when the release existed before this request (no new cost).
	Replayed  bool
	SHA256    []byte
	Guarantee string
	// NoiseSD is the standard deviation σ of the Gaussian noise in every entry of Z
	// (projection.Report.NoiseSD; mechanism gaussian), 0 for the lifted mechanism. It
	// is public: it depends only on (ε, δ), n, r and the sensitivity of M, never on the
	// data, so the modeler may model it (gpucb.Config.InputNoiseVariance).
	NoiseSD float64
	// WholePatient is the release's whole-patient cost as the ledger recorded it: its
	// (ε, δ) for replacing one patient's record by any other (the clip diameter's
	// group privacy), or unbounded.
	WholePatient ledger.PatientCost
	Budget       ledger.Balance

	releases blob.Store
	blob     string // the matrix's name in releases
	mem      *memory.Budget
}

// Open opens the release's bytes (matrixio format) for streaming; the reader may use
// ctx while it is read. The caller checks them against SHA256, and closes the reader:
// it holds the memory of the stream (Config.Memory) until then, Open waiting for it
// while ctx allows.
func (p *Projection) Open(ctx context.Context) (io.ReadCloser, error) {
	release, err := p.mem.Acquire(ctx, streamNeed(p.releases, p.Rows, p.Cols))
	if err != nil {
		return nil, fmt.Errorf("curator: waiting for the memory to stream release %s: %w", p.ID, err)
	}
	rc, err := p.releases.Open(ctx, p.blob)
	if err != nil {
		release()
		return nil, fmt.Errorf("curator: release %s is recorded but its matrix is unreadable: %w", p.ID, err)
	}
	return &heldReader{ReadCloser: rc, release: release}, nil
}

// projectionRecord is what the ledger stores as the result of a projection release.
type projectionRecord struct {
	// File names the matrix in the curator's blob store (Config.Releases); the field
	// keeps the name it had when releases were always files.
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Rows   int    `json:"rows"`
	Cols   int    `json:"cols"`
	// Sensitivity is the L2 sensitivity the Gaussian release's noise was calibrated to
	// (projection.Report.Sensitivity; it depends on M only), kept so that a replay
	// states the same whole-patient figures; 0 for lifted releases and records made
	// before it was kept, which state the nominal figures.
	Sensitivity float64 `json:"sensitivity,omitempty"`
	// NoiseSD is σ of the Gaussian release (projection.Report.NoiseSD), kept so that a
	// replay states the same σ; 0 for lifted releases. Records made before it was kept
	// have their σ recomputed from Sensitivity (noiseSD).
	NoiseSD float64 `json:"noise_sd,omitempty"`
	// Guarantee is the guarantee text stated when the release was made, replayed
	// word for word; empty in records made before it was kept (legacyMatches).
	Guarantee string `json:"guarantee,omitempty"`
	// Inputs is what the release's identity was derived from besides the request
	// (guaranteeInputs), kept for the operator.
	Inputs string `json:"inputs,omitempty"`
}

// noiseSD is the σ of the release pr of req: the recorded one, or for a Gaussian
// release recorded before σ was kept, the σ its sensitivity calibrates (the same
// dp.NewVectorGaussian as projection.ProjectGaussian).
func (pr projectionRecord) noiseSD(req ProjectionRequest) (float64, error) {
	if pr.NoiseSD > 0 || pr.Sensitivity == 0 {
		return pr.NoiseSD, nil
	}
	m, err := dp.NewVectorGaussian(req.Epsilon, req.Delta, pr.Sensitivity, pr.Rows*pr.Cols)
	if err != nil {
		return 0, fmt.Errorf("curator: the noise of recorded release r=%d: %w", pr.Cols, err)
	}
	return m.Scale(), nil
}

// ErrDimensionAboveFeatures marks the refusal of a projection dimension r above the
// dataset's number of features d (ErrInvalidArgument too).
var ErrDimensionAboveFeatures = errors.New("projection dimension above the number of features")

// validate checks r against the curator's settings: the most dimensions it releases
// and, unless the mechanism is the lifted one (kept to reproduce the paper's runs,
// Kharkovskii et al. 2020, Table 1: r = 10 on d = 2), r ≤ d. A Gaussian release with
// r > d keeps no more information than r = d (it is an isometry from r = d on) and adds
// noise in every extra coordinate: it is refused for every client, whatever it checks.
func (c *Curator) validate(r ProjectionRequest) error {
	if len(r.Label) > 64 {
		return fmt.Errorf("curator: %w: label must be at most 64 bytes", ErrInvalidArgument)
	}
	if maxR := c.cfg.MaxProjectionDim; r.R > maxR {
		return fmt.Errorf("curator: %w: projection dimension r = %d exceeds this curator's maximum %d", ErrInvalidArgument, r.R, maxR)
	}
	if d := c.ds.D; r.R > d && c.proj.AddsNoise() && !c.cfg.AllowWideProjection {
		return fmt.Errorf("curator: %w: %w: r = %d exceeds the %d features of dataset %s; a projection to more dimensions than features keeps no more "+
			"information than r = %d and adds noise in every extra coordinate, so ask for r ≤ %d (or let the curator choose r)",
			ErrInvalidArgument, ErrDimensionAboveFeatures, r.R, d, c.ds.Name, d, d)
	}
	if err := (projection.Params{R: r.R, Epsilon: r.Epsilon, Delta: r.Delta}).Validate(); err != nil {
		return fmt.Errorf("curator: %w: %w", ErrInvalidArgument, err)
	}
	return nil
}

// releaseID names a projection release by its public parameters, the caller and
// everything its guarantee depends on (guaranteeInputs: the mechanism, the scaling with
// its clip norm and unit): a curator restarted with another scaling or unit makes a
// new release, with the guarantee of its settings, rather than replay an old one under
// a guarantee it was not made with.
func (c *Curator) releaseID(identity string, r ProjectionRequest) string {
	h := sha256.New()
	h.Write([]byte(c.legacyReleaseID(identity, r)))
	fmt.Fprintf(h, "\x00inputs=%s", c.inputs)
	return "proj-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// legacyReleaseID is the id releases had before their identity covered the scaling
// (releaseID): the request, the caller and the mechanism only. Such releases are
// replayed when what they recorded of their guarantee matches this curator's
// (legacyMatches).
func (c *Curator) legacyReleaseID(identity string, r ProjectionRequest) string {
	h := sha256.New()
	fmt.Fprintf(h, "projection\x00%s\x00%s\x00%d\x00", c.cfg.DatasetID, identity, r.R)
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], math.Float64bits(r.Epsilon))
	binary.LittleEndian.PutUint64(b[8:], math.Float64bits(r.Delta))
	h.Write(b[:])
	h.Write([]byte(r.Label))
	// Lifted releases keep the ids they had before there was a choice of mechanism.
	if !c.proj.Baseline() {
		fmt.Fprintf(h, "\x00mechanism=%s", c.proj.Name())
	}
	return "proj-" + hex.EncodeToString(h.Sum(nil)[:12])
}

// guaranteeInputs describes, as canonical JSON, what a projection's guarantee and
// bytes depend on besides the request: the mechanism; the features; the scaling's
// mode, clip norm, unit and whether it keeps a guarantee; for the public scalings
// their constants (offset and scale per feature, public); for the private one the
// parameters its stored estimate is kept under (its ε, never the estimated bounds,
// which are for the operator only). It is computed once: none of it changes while the
// curator serves.
func guaranteeInputs(mechanism string, ds *dataset.Dataset) string {
	sc := ds.Scaling
	in := struct {
		Version            int       `json:"v"`
		Mechanism          string    `json:"mechanism"`
		Features           []string  `json:"features"`
		Mode               string    `json:"scaling"`
		Private            bool      `json:"private"`
		ClipDiameter       float64   `json:"clip_diameter_units,omitempty"`
		ClipNorm           float64   `json:"clip,omitempty"`
		Unit               float64   `json:"unit,omitempty"`
		Offset             []float64 `json:"offset,omitempty"`
		Scale              []float64 `json:"scale,omitempty"`
		Epsilon, TargetEps float64   `json:",omitempty"`
		NonprivateMaxNorm  float64   `json:"max_norm,omitempty"`
	}{Version: 2, Mechanism: mechanism, Features: ds.Features, Mode: string(sc.Mode), Private: ds.Private}
	if ds.Private {
		in.ClipDiameter, in.ClipNorm, in.Unit = ds.ClipDiameterUnits(), sc.ClipNorm, sc.Unit
	}
	switch sc.Mode {
	case dataset.ScaleSchema, dataset.ScaleFixed, dataset.ScaleNone:
		in.Offset, in.Scale = ds.Offset, ds.Scale
	case dataset.ScalePrivate:
		in.Epsilon, in.TargetEps = sc.Epsilon, sc.TargetEpsilon
	default:
		in.NonprivateMaxNorm = sc.MaxNorm
	}
	b, _ := json.Marshal(in) // plain fields, finite floats
	return string(b)
}

// projectionKey is the ledger key of identity's projection release req, and its id.
func (c *Curator) projectionKey(identity string, req ProjectionRequest) (key, id string) {
	id = c.releaseID(identity, req)
	return "projection/" + id, id
}

// recordedProjection returns the ledger record of identity's projection release req,
// its id and whether there is one: under its current id, or under its legacy id when
// that record's statement of its guarantee matches what this curator would state
// (legacyMatches). A legacy record that does not match is not this release: the
// request is a new release, with a new id.
func (c *Curator) recordedProjection(ctx context.Context, identity string, req ProjectionRequest) (ledger.Receipt, string, bool, error) {
	key, id := c.projectionKey(identity, req)
	acct := c.account(identity)
	rec, ok, err := c.ledger.Get(ctx, acct, key)
	if err != nil || ok {
		return rec, id, ok, err
	}
	lid := c.legacyReleaseID(identity, req)
	rec, ok, err = c.ledger.Get(ctx, acct, "projection/"+lid)
	if err != nil || !ok {
		return ledger.Receipt{}, id, false, err
	}
	if !c.legacyMatches(rec, req) {
		c.log.Info("a projection released under earlier settings is not replayed: its recorded guarantee differs from this curator's",
			zap.String("release", lid), zap.String("identity", identity), zap.String("new_release", id))
		return ledger.Receipt{}, id, false, nil
	}
	return rec, lid, true, nil
}

// legacyMatches reports whether a projection record made before releases kept their
// guarantee states the whole-patient figure this curator would state for it: the
// description the curator wrote holds the release's whole-patient clause (mechanism,
// clip diameter, private scaling), so a record made under another unit, clip norm,
// mechanism or kind of scaling does not match. Records older than that clause never
// match.
func (c *Curator) legacyMatches(rec ledger.Receipt, req ProjectionRequest) bool {
	var pr projectionRecord
	if json.Unmarshal(rec.Result, &pr) != nil || pr.Guarantee != "" {
		return false
	}
	short := c.wholePatient(req.Epsilon, req.Delta, pr.Rows*pr.Cols, pr.Sensitivity).short()
	d := rec.Description
	i := strings.Index(d, short)
	return i >= 0 && (len(d) == i+len(short) || !strings.HasPrefix(d[i+len(short):], ", plus"))
}

// ReleaseProjection returns the caller's projection with these parameters, computing,
// storing and charging it first if it is new: reserve, compute, commit. Its cost is
// reserved in the ledger (ledger.Ledger.Reserve) before the data is touched, so that
// concurrent releases beyond the budget are refused before any work; it is computed
// and stored; and it is charged in the reservation's transaction (ledger.Ledger.Commit)
// before it is returned, or the reservation is cancelled if anything failed. With
// req.WithAnswers the identity's answers are reserved and paid in the same ledger
// transactions, both or neither; a replayed projection whose answers are not paid yet
// has them charged before it is returned.
func (c *Curator) ReleaseProjection(ctx context.Context, identity string, req ProjectionRequest) (*Projection, error) {
	if err := c.validate(req); err != nil {
		return nil, err
	}
	key, id := c.projectionKey(identity, req)
	acct := c.account(identity)

	unlock := c.locks.lock(key)
	defer unlock()

	if p, ok, err := c.replayProjection(ctx, identity, req); ok || err != nil {
		return p, err
	}
	cost := ledger.Cost{Epsilon: req.Epsilon, Delta: req.Delta}
	res, answers, err := c.reserveProjection(ctx, identity, acct, key, req, cost)
	if err != nil {
		return nil, err
	}
	defer res.done(ctx)
	if rec := res.r.Receipts[0]; rec.Replayed { // another replica or process released it first
		if answers != nil {
			if _, err := res.commit(ctx, []ledger.Charge{*answers}); err != nil {
				return nil, fmt.Errorf("curator: the answers of release %s: %w", id, err)
			}
		}
		return c.storedProjection(ctx, identity, id, rec, req)
	}
	// The memory of the computation, admitted beside the releases being made, while the
	// reservation holds the budget.
	release, _, err := c.admit(ctx, req)
	if err != nil {
		return nil, err
	}
	defer release()
	if c.computeHook != nil {
		c.computeHook()
	}

	start := time.Now()
	src := projection.SecureSource()
	if c.cfg.SimulationProjectionSource != nil {
		src = c.cfg.SimulationProjectionSource()
	}
	params := projection.Params{R: req.R, Epsilon: req.Epsilon, Delta: req.Delta}
	// The release is computed a window of rows at a time while it is stored: its n×r
	// matrix is never held whole.
	z, err := c.proj.Stream(ctx, c.ds.X, c.ds.N, c.ds.D, params, src)
	if err != nil {
		return nil, fmt.Errorf("curator: %w", err)
	}
	defer z.Close()
	rep := z.Report()
	file, sum, err := c.storeProjection(ctx, identity, id, req, z, &rep, start)
	if err != nil {
		return nil, err
	}
	// The matrix is no longer needed here; removing it when it turns out unrecorded
	// must not depend on the request's context.
	remove := func() {
		if err := c.releases.Delete(context.WithoutCancel(ctx), file); err != nil {
			c.log.Warn("removing an unrecorded release matrix", zap.String("release", id), zap.Error(err))
		}
	}
	charge, guarantee, err := c.projectionCharge(acct, key, req, cost, file, sum, &rep)
	if err != nil {
		remove()
		return nil, fmt.Errorf("curator: %w", err)
	}
	charges := []ledger.Charge{charge}
	if answers != nil {
		charges = append(charges, *answers)
	}
	// Charged durably, in the reservation's transaction, before anything is sent.
	recs, err := res.commit(ctx, charges)
	if err != nil {
		// The commit may have happened even though Charge reports an error (a lost
		// acknowledgement): keep the file if the ledger names it.
		if got, ok, gerr := c.ledger.Get(context.WithoutCancel(ctx), acct, key); gerr == nil && (!ok || !strings.Contains(string(got.Result), file)) {
			remove()
		}
		return nil, fmt.Errorf("curator: %w", err)
	}
	if answers != nil {
		c.notePaid(identity, recs[1])
	}
	if rec := recs[0]; rec.Replayed { // another replica or process released it first
		remove()
		return c.storedProjection(ctx, identity, id, rec, req)
	}
	c.noteProjection(identity)
	c.log.Info("projection released", zap.String("release", id), zap.String("identity", identity),
		zap.Float64("epsilon", cost.Epsilon), zap.Float64("delta", cost.Delta))
	bal, err := c.Balance(ctx, identity, ledger.RelationFeatureUnit)
	if err != nil {
		return nil, err
	}
	return &Projection{ID: id, Rows: c.ds.N, Cols: req.R, SHA256: sum, Guarantee: guarantee, NoiseSD: rep.NoiseSD, WholePatient: recs[0].Patient,
		Budget: bal, releases: c.releases, blob: file, mem: c.cfg.Memory}, nil
}

// replayProjection returns (ok) the caller's projection already released with these
// parameters, with its answers charged first if req asks for them: a replay costs no
// new ε, but answers released with it must still be paid for.
func (c *Curator) replayProjection(ctx context.Context, identity string, req ProjectionRequest) (*Projection, bool, error) {
	rec, id, ok, err := c.recordedProjection(ctx, identity, req)
	if err != nil {
		return nil, false, fmt.Errorf("curator: %w", err)
	} else if !ok {
		return nil, false, nil
	}
	if req.WithAnswers {
		if err := c.chargeAnswers(ctx, identity); err != nil {
			return nil, true, fmt.Errorf("curator: the answers of release %s: %w", id, err)
		}
	}
	p, err := c.storedProjection(ctx, identity, id, rec, req)
	return p, true, err
}

// reserveProjection reserves what a new release charges, with the identity's unpaid
// answers if req asks for them (returned, nil if none), before any data is touched: a
// release that does not fit beside the charges made and the releases being computed is
// refused here. The whole-patient cost reserved is the nominal figure's lower bound
// (the release's own figure, known once it is computed, is within a factor
// (1 + nominalMargin)² of it and is what the commit checks).
func (c *Curator) reserveProjection(ctx context.Context, identity string, acct ledger.Account, key string, req ProjectionRequest, cost ledger.Cost) (*reservation, *ledger.Charge, error) {
	var answers *ledger.Charge
	if req.WithAnswers {
		var err error
		if answers, err = c.unpaidAnswers(ctx, identity); err != nil {
			return nil, nil, err
		}
	}
	lower := c.nominalPatientLowerBound(req.Epsilon, req.Delta)
	held := []ledger.Charge{{Account: acct, Key: key, Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit, Cost: cost, Patient: &lower, Stored: c.storedBytes(req.R),
		Description: fmt.Sprintf("private projection r=%d ε=%g δ=%g label=%q, being computed", req.R, req.Epsilon, req.Delta, req.Label)}}
	if answers != nil {
		held = append(held, *answers)
	}
	res, err := c.reserve(ctx, held)
	if err != nil {
		return nil, nil, err
	}
	return res, answers, nil
}

// storeProjection computes release id by storing z under a fresh name, which it
// returns with the matrix's SHA-256, and tells the operator how it was computed.
func (c *Curator) storeProjection(ctx context.Context, identity, id string, req ProjectionRequest, z *projection.Stream, rep *projection.Report, start time.Time) (string, []byte, error) {
	var nonce [8]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", nil, fmt.Errorf("curator: %w", err)
	}
	file := fmt.Sprintf("%s-%s.f64", id, hex.EncodeToString(nonce[:]))
	// Durable before the charge that names it: a charged release can always be replayed.
	sum, err := c.releases.Put(ctx, file, z)
	if err != nil {
		return "", nil, fmt.Errorf("curator: computing and storing release %s: %w", id, err)
	}
	// Operator-only: which branch was taken depends on the data.
	c.log.Info("projection computed and stored",
		zap.String("release", id), zap.String("identity", identity),
		zap.Int("r", req.R), zap.Float64("epsilon", req.Epsilon), zap.Float64("delta", req.Delta),
		zap.String("mechanism", rep.Mechanism), zap.Float64("noise_sd", rep.NoiseSD),
		zap.Float64("sigma_min", rep.SigmaMin), zap.Float64("omega", rep.Omega),
		zap.Bool("lifted", rep.Lifted), zap.String("route", rep.Route),
		zap.Int64("memory_bytes", c.computeNeed(req.R)),
		zap.Duration("duration", time.Since(start)))
	return file, sum, nil
}

// storedProjection returns the recorded release rec of req with the guarantee it was
// released with, word for word; a record made before the guarantee was kept (whose
// statement legacyMatches checked) states it for its recorded dimension and
// sensitivity.
func (c *Curator) storedProjection(ctx context.Context, identity, id string, rec ledger.Receipt, req ProjectionRequest) (*Projection, error) {
	var pr projectionRecord
	if err := json.Unmarshal(rec.Result, &pr); err != nil {
		return nil, fmt.Errorf("curator: ledger record of release %s is corrupt: %w", id, err)
	}
	sum, err := hex.DecodeString(pr.SHA256)
	if err != nil || blob.CheckName(pr.File) != nil {
		return nil, fmt.Errorf("curator: ledger record of release %s is corrupt", id)
	}
	sd, err := pr.noiseSD(req)
	if err != nil {
		return nil, err
	}
	c.noteProjection(identity)
	bal, err := c.Balance(ctx, identity, ledger.RelationFeatureUnit)
	if err != nil {
		return nil, err
	}
	guarantee := pr.Guarantee
	if guarantee == "" {
		guarantee = c.projectionGuarantee(req.Epsilon, req.Delta, pr.Rows*pr.Cols, pr.Sensitivity)
	}
	return &Projection{ID: id, Rows: pr.Rows, Cols: pr.Cols, Replayed: true, SHA256: sum, Guarantee: guarantee, NoiseSD: sd, WholePatient: rec.Patient,
		Budget: bal, releases: c.releases, blob: pr.File, mem: c.cfg.Memory}, nil
}

// ReleasesDir is the directory of a curator's state directory that holds its released
// matrices as files (blob.Dir) when Config.Releases is nil.
func ReleasesDir(stateDir string) string { return filepath.Join(stateDir, "releases") }

// Adopted counts what AdoptReleases did.
type Adopted struct {
	// Copied releases were missing from the store and copied into it from the older one.
	Copied int
	// Missing releases are in neither store: they cannot be replayed by this curator.
	Missing int
}

// AdoptReleases copies into to every projection release of dataset that the ledger
// records and to lacks but older holds (a curator moving its releases from the files of
// its state directory into its PostgreSQL ledger's database), checking each copy against
// the SHA-256 the ledger recorded; a copy that does not match is removed and reported.
// It changes no record and charges nothing: the same release, byte for byte, is only
// kept elsewhere.
func AdoptReleases(ctx context.Context, led Records, dataset string, to, older blob.Store) (Adopted, error) {
	var out Adopted
	entries, err := led.Entries(ctx, dataset)
	if err != nil {
		return out, fmt.Errorf("curator: adopting releases: %w", err)
	}
	var errs []error
	for _, e := range entries {
		if e.Kind != ledger.KindProjection || e.ResultSize == 0 {
			continue
		}
		rec, ok, err := led.Get(ctx, e.Account, e.Key)
		if err != nil {
			return out, fmt.Errorf("curator: adopting releases: %w", err)
		}
		var pr projectionRecord
		if !ok || json.Unmarshal(rec.Result, &pr) != nil || blob.CheckName(pr.File) != nil {
			errs = append(errs, fmt.Errorf("ledger record %s of %s is corrupt", e.Key, e.Identity))
			continue
		}
		if rc, err := to.Open(ctx, pr.File); err == nil {
			rc.Close()
			continue
		} else if !errors.Is(err, blob.ErrNotFound) {
			return out, fmt.Errorf("curator: adopting releases: %w", err)
		}
		src, err := older.Open(ctx, pr.File)
		if errors.Is(err, blob.ErrNotFound) {
			out.Missing++
			continue
		} else if err != nil {
			return out, fmt.Errorf("curator: adopting releases: %w", err)
		}
		sum, err := to.Put(ctx, pr.File, src)
		src.Close()
		if errors.Is(err, blob.ErrExists) { // another replica adopted it meanwhile
			continue
		}
		if err != nil {
			return out, fmt.Errorf("curator: adopting release %s: %w", pr.File, err)
		}
		if hex.EncodeToString(sum) != pr.SHA256 {
			if err := to.Delete(ctx, pr.File); err != nil {
				return out, fmt.Errorf("curator: adopting releases: %w", err)
			}
			errs = append(errs, fmt.Errorf("release %s is damaged: its SHA-256 is not the one the ledger recorded", pr.File))
			continue
		}
		out.Copied++
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("curator: adopting releases: %w", errors.Join(errs...))
	}
	return out, nil
}

// projectionCharge is the ledger charge of a computed release, with the guarantee it
// states: the record holds the file, its checksum and the guarantee word for word, so
// that a replay returns what was charged.
func (c *Curator) projectionCharge(acct ledger.Account, key string, req ProjectionRequest, cost ledger.Cost, file string, sum []byte, rep *projection.Report) (ledger.Charge, string, error) {
	w := c.wholePatientOf(req.Epsilon, req.Delta, rep)
	guarantee := c.projectionGuaranteeWith(req.Epsilon, req.Delta, w)
	patient := w.patientCost()
	result, err := json.Marshal(projectionRecord{File: file, SHA256: hex.EncodeToString(sum), Rows: c.ds.N, Cols: req.R, Sensitivity: rep.Sensitivity, NoiseSD: rep.NoiseSD,
		Guarantee: guarantee, Inputs: c.inputs})
	if err != nil {
		return ledger.Charge{}, "", err
	}
	return ledger.Charge{
		Account: acct, Key: key, Kind: ledger.KindProjection, Relation: ledger.RelationFeatureUnit, Cost: cost, Result: result, Patient: &patient,
		Stored: c.storedBytes(req.R), Description: fmt.Sprintf("private projection r=%d ε=%g δ=%g label=%q; relation %s (one protected unit of one record's scaled features); %s",
			req.R, req.Epsilon, req.Delta, req.Label, ledger.RelationFeatureUnit, w.short()),
	}, guarantee, nil
}
