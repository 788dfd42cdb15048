package study

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/privbo/privbo/internal/hugepage"
	"github.com/privbo/privbo/pkg/blob"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/sqlitedb"
)

// ErrNotFound is returned (wrapped) for a study that does not exist.
var ErrNotFound = errors.New("no such study")

// ErrExists is returned (wrapped) by Create for a name already taken.
var ErrExists = errors.New("study already exists")

// ErrLocked is returned (wrapped) by Lock when another process runs the study.
var ErrLocked = errors.New("study is in use by another process")

// DBFile is the name of the database inside a studies directory.
const DBFile = "studies.db"

const schemaVersion = 1

var ddl = []string{
	`CREATE TABLE IF NOT EXISTS schema_version (
		id INTEGER PRIMARY KEY CHECK (id = 1),
		version INTEGER NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS studies (
		name TEXT PRIMARY KEY,
		created_ns INTEGER NOT NULL,
		updated_ns INTEGER NOT NULL,
		done INTEGER NOT NULL DEFAULT 0,
		connection TEXT NOT NULL,
		settings TEXT NOT NULL,
		release TEXT,
		z_sha256 BLOB,
		initial_index INTEGER NOT NULL DEFAULT -1,
		known_best REAL,
		budget TEXT NOT NULL DEFAULT '{}',
		last_error TEXT NOT NULL DEFAULT '')`,
	`CREATE TABLE IF NOT EXISTS observations (
		study TEXT NOT NULL REFERENCES studies (name),
		iteration INTEGER NOT NULL CHECK (iteration >= 1),
		round INTEGER NOT NULL CHECK (round >= 1),
		row_index INTEGER NOT NULL CHECK (row_index >= 0),
		value REAL NOT NULL,
		replayed INTEGER NOT NULL,
		created_ns INTEGER NOT NULL,
		PRIMARY KEY (study, iteration))`,
}

// Connection is how to reach the curator again. It holds paths, never secrets: the
// files themselves stay where the user keeps them.
type Connection struct {
	Curator    string `json:"curator"`
	Identity   string `json:"identity,omitempty"`
	CA         string `json:"ca,omitempty"`
	Cert       string `json:"cert,omitempty"`
	Key        string `json:"key,omitempty"`
	TokenFile  string `json:"token-file,omitempty"`
	ServerName string `json:"server-name,omitempty"`
}

// Settings are the choices that determine a study's sequence of queries. The JSON names
// are the settings' stored names (Named, Diff and the report use them); the modeler CLI
// maps each to its flag. Values are stored after defaults are applied.
type Settings struct {
	R              int     `json:"r"`
	Epsilon        float64 `json:"epsilon"`
	Delta          float64 `json:"delta"`
	Label          string  `json:"label"`
	Iterations     int     `json:"iterations"`
	Batch          int     `json:"batch"`
	Kernel         string  `json:"kernel"`
	Lengthscale    float64 `json:"lengthscale"`
	SignalVariance float64 `json:"signal-variance"`
	NoiseVariance  float64 `json:"noise-variance"`
	// FitEvery k > 0 refits the kernel hyperparameters by maximum likelihood every k
	// observations (pkg/modeler); 0, the value of studies stored before the setting
	// existed, keeps them fixed.
	FitEvery     int     `json:"fit-every"`
	DeltaUCB     float64 `json:"delta-ucb"`
	ConstantBeta float64 `json:"beta"`
	AllowRepeats bool    `json:"allow-repeats"`
	RawOutputs   bool    `json:"raw-outputs"`
	// InitialIndex as asked: −1 draws it at random (the drawn row is Study.InitialIndex).
	InitialIndex int `json:"initial-index"`
	// Direction is Maximize ("", studies stored before the setting existed) or
	// Minimize.
	Direction Direction `json:"direction,omitempty"`
	// ProjectionNoise is how the GP treats the Gaussian noise of the projection
	// (pkg/modeler's Config.ProjectionNoise): "" models it (the default, and the value of
	// studies stored before the setting existed, whose releases state no noise), "kernel"
	// or "ignore".
	ProjectionNoise string `json:"projection-noise,omitempty"`
	// AnswerClip is the range "LOWER,UPPER" inside the curator's public output range
	// the study asks its answers to be clipped to (pkg/modeler's Config.Clip); "", the
	// value of studies stored before the setting existed, is the public range.
	AnswerClip string `json:"answer-clip,omitempty"`
	// RecommendLikelihood is the likelihood the recommendation is made under
	// (pkg/modeler's Config.RecommendLikelihood): "" (studies stored before the setting
	// existed, and the default) or "laplace" the answers' own with Laplace answers,
	// "gaussian" a Gaussian of the same variance.
	RecommendLikelihood string `json:"recommend-likelihood,omitempty"`
}

// Validate checks the ranges a study needs; the modeler validates the rest.
func (s Settings) Validate() error {
	switch {
	case s.R < 1:
		return fmt.Errorf("study: r must be ≥ 1, got %d", s.R)
	case s.Iterations < 1:
		return fmt.Errorf("study: iterations must be ≥ 1, got %d", s.Iterations)
	case s.Batch < 1:
		return fmt.Errorf("study: batch must be ≥ 1, got %d", s.Batch)
	case s.InitialIndex < -1:
		return fmt.Errorf("study: initial index must be ≥ 0 or −1 (random), got %d", s.InitialIndex)
	case s.FitEvery < 0:
		return fmt.Errorf("study: fit-every must be ≥ 0 (0 keeps the hyperparameters fixed), got %d", s.FitEvery)
	case s.Direction != Maximize && s.Direction != Minimize:
		return fmt.Errorf("study: direction %q: want %q (maximize) or %q", string(s.Direction), string(Maximize), string(Minimize))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"epsilon", s.Epsilon}, {"delta", s.Delta}, {"lengthscale", s.Lengthscale}, {"signal-variance", s.SignalVariance},
		{"noise-variance", s.NoiseVariance}, {"delta-ucb", s.DeltaUCB}, {"beta", s.ConstantBeta}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("study: %s must be finite, got %g", f.name, f.v)
		}
	}
	return nil
}

// Diff lists, as "name: stored X, given Y", every setting in which given differs from s.
// Numbers compare exactly.
func (s Settings) Diff(given Settings) []string {
	var out []string
	a, b := reflect.ValueOf(s), reflect.ValueOf(given)
	ty := a.Type()
	for k := range ty.NumField() {
		if !a.Field(k).Equal(b.Field(k)) {
			name, _, _ := strings.Cut(ty.Field(k).Tag.Get("json"), ",")
			out = append(out, fmt.Sprintf("%s: stored %v, given %v", name, a.Field(k).Interface(), b.Field(k).Interface()))
		}
	}
	return out
}

// Named returns the settings as stored name → value text (numbers in their shortest
// exact form, which parse back exactly), for a report or for filling the options a
// resumed command line did not set.
func (s Settings) Named() map[string]string {
	out := map[string]string{}
	v := reflect.ValueOf(s)
	ty := v.Type()
	for k := range ty.NumField() {
		name, _, _ := strings.Cut(ty.Field(k).Tag.Get("json"), ",")
		out[name] = fmt.Sprint(v.Field(k).Interface())
	}
	return out
}

// OutputPrivacy is how the curator releases answers (its GetDatasetInfo), as the curator
// states it: the modeler reads the figures below and never calibrates a mechanism
// itself (the mechanism's name is for people).
type OutputPrivacy struct {
	Mechanism       string  `json:"mechanism"`
	EpsilonPerIndex float64 `json:"epsilon_per_index"`
	DeltaPerIndex   float64 `json:"delta_per_index"`
	Lower           float64 `json:"lower,omitempty"`
	Upper           float64 `json:"upper,omitempty"`
	// Relation and Guarantee are the answers' neighbour relation and guarantee as the
	// curator stated them ("" from curators that did not state them).
	Relation  string `json:"relation,omitempty"`
	Guarantee string `json:"guarantee,omitempty"`
	// Noise is the family of the answers' noise, stored by name, and NoiseSD the
	// standard deviation of each answer's noise at the public range (0 for noise.None).
	// A record with neither noise.None nor a positive sd (a curator or a study file
	// that predates the statement) is Unstated until a NoiseStatement states it
	// (WithNoiseStatement).
	Noise   noise.Family `json:"noise,omitempty"`
	NoiseSD float64      `json:"noise_sd,omitempty"`
}

// UnmarshalJSON reads a study file, also one written before the family was stored by
// name: "exact": true is noise.None, "laplace": true noise.Laplace, a noise sd alone
// noise.Gaussian.
func (o *OutputPrivacy) UnmarshalJSON(b []byte) error {
	type plain OutputPrivacy
	var v struct {
		plain
		Exact, Laplace bool // "exact", "laplace"
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*o = OutputPrivacy(v.plain)
	switch {
	case o.Noise != noise.Unstated:
	case v.Exact:
		o.Noise = noise.None
	case v.Laplace:
		o.Noise = noise.Laplace
	case o.NoiseSD > 0:
		o.Noise = noise.Gaussian
	}
	return nil
}

// Exact reports whether the answers carry no noise.
func (o OutputPrivacy) Exact() bool { return o.Noise == noise.None }

// Unstated reports whether o says neither that the answers are exact nor how noisy they
// are: a record from before the curator stated its noise.
func (o OutputPrivacy) Unstated() bool { return !o.Exact() && !(o.NoiseSD > 0) }

// ErrNoiseUnstated is returned for answers whose noise the curator did not state (see
// OutputPrivacy.Unstated and WithNoiseStatement).
var ErrNoiseUnstated = errors.New("the curator did not state the answers' noise")

// NoiseStatement fills the statement of an Unstated OutputPrivacy from its mechanism's
// name and settings, as the curator would have stated it. It is for records older than
// the statement only; the modeler's CLI passes the answer registry's calibration
// (curatorclient.StateNoise), so that this package needs no mechanism.
type NoiseStatement func(*OutputPrivacy) error

// AnswerNoise is the noise of each answer: its standard deviation and variance at the
// public range, and its family.
type AnswerNoise struct {
	SD, Variance float64
	Noise        noise.Family
}

// AnswerNoise is the noise the curator stated for the answers (Noise, NoiseSD);
// ErrNoiseUnstated when it stated none.
func (o OutputPrivacy) AnswerNoise() (AnswerNoise, error) {
	switch {
	case o.Exact():
		return AnswerNoise{Noise: noise.None}, nil
	case math.IsInf(o.NoiseSD, 0):
		return AnswerNoise{}, fmt.Errorf("study: the answers' noise sd %g is not finite", o.NoiseSD)
	case o.NoiseSD > 0:
		return AnswerNoise{SD: o.NoiseSD, Variance: o.NoiseSD * o.NoiseSD, Noise: o.Noise}, nil
	}
	return AnswerNoise{}, fmt.Errorf("study: %w (mechanism %q)", ErrNoiseUnstated, o.Mechanism)
}

// Release describes the projection the study runs on.
type Release struct {
	ID      string `json:"id"`
	Dataset string `json:"dataset"`
	// DatasetID is the curator's stable dataset id ("" from curators without one).
	DatasetID string `json:"dataset_id,omitempty"`
	// Mechanism and Relation of the projection, as the curator stated them.
	Mechanism string `json:"mechanism,omitempty"`
	Relation  string `json:"relation,omitempty"`
	// Rows n and Cols r of Z.
	Rows int `json:"rows"`
	Cols int `json:"cols"`
	// Epsilon and Delta of the release (the study's settings, as the curator charged).
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Replayed is true when the curator had made this release to the caller before, so
	// that this study did not pay for it.
	Replayed      bool          `json:"replayed"`
	Guarantee     string        `json:"guarantee"`
	ProtectedUnit string        `json:"protected_unit,omitempty"`
	OutputPrivacy OutputPrivacy `json:"output_privacy"`
	// MaxQueryIndices is the curator's limit on indices per Query request.
	MaxQueryIndices int `json:"max_query_indices,omitempty"`
	// Identity is the identity the curator charged for the release, as it reported it
	// ("" in studies stored before it was kept); a resumed study must be charged to it.
	Identity string `json:"identity,omitempty"`
	// NoiseSD is the standard deviation of the Gaussian noise in every entry of Z as the
	// curator stated it (0 for the lifted mechanism, and in studies stored before it was
	// kept); a resumed study models the noise this value states.
	NoiseSD float64 `json:"noise_sd,omitempty"`
	// WholePatient is the release's whole-patient cost as the curator's ledger recorded
	// it (nil from curators that do not state it, and in studies stored before).
	WholePatient *WholePatient `json:"whole_patient,omitempty"`
}

// WholePatient is a release's whole-patient cost: its (ε, δ) for replacing one
// patient's record by any other, or Bounded false when it has none.
type WholePatient struct {
	Bounded bool    `json:"bounded"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Budget is the caller's (ε, δ) budget as the curator last reported it.
type Budget struct {
	Identity         string  `json:"identity,omitempty"`
	EpsilonLimit     float64 `json:"epsilon_limit"`
	DeltaLimit       float64 `json:"delta_limit"`
	EpsilonSpent     float64 `json:"epsilon_spent"`
	DeltaSpent       float64 `json:"delta_spent"`
	EpsilonRemaining float64 `json:"epsilon_remaining"`
	DeltaRemaining   float64 `json:"delta_remaining"`
}

// Study is one stored study.
type Study struct {
	Name             string
	Created, Updated time.Time
	Connection       Connection
	Settings         Settings
	// Release is nil until the projection has been received and stored.
	Release *Release
	// InitialIndex is the first row queried, −1 until drawn.
	InitialIndex int
	// KnownBest is the optimum max_i f(x_i) (min_i when the study minimises) when known
	// (simulations), else nil.
	KnownBest *float64
	// Budget is the caller's budget at the last contact with the curator.
	Budget Budget
	// Done is set once the study has made all its iterations.
	Done bool
	// LastError is the error that last stopped a run ("" if none).
	LastError string

	zSum []byte
}

// Observation is one answered query.
type Observation struct {
	// Iteration t ≥ 1 and Round ≥ 1 (one Query request; q rows per round).
	Iteration, Round int
	Index            int
	Value            float64
	// Replayed is true when the curator said it had released the value before.
	Replayed bool
	Time     time.Time
}

// Summary is one line of List.
type Summary struct {
	Name    string `json:"name"`
	Dataset string `json:"dataset"`
	Done    int    `json:"iterations_done"`
	Total   int    `json:"iterations_total"`
	// BestIndex is −1 and BestValue NaN (null in JSON) before the first answer.
	BestIndex int      `json:"best_index"`
	BestValue *float64 `json:"best_value"`
	// Direction is "maximize" or "minimize": what best means.
	Direction string `json:"direction"`
	// State is "new" (no release yet), "running" (locked by a process), "stopped"
	// (interrupted; resume with modeler run --study) or "done".
	State   string    `json:"state"`
	Updated time.Time `json:"updated"`
	Error   string    `json:"error,omitempty"`
}

// Store is a studies directory. It is safe for concurrent use.
type Store struct {
	dir string
	db  *sql.DB
	zs  *blob.Dir // the released matrices, name+".z" in dir
	// noise states the answers' noise of releases stored without it (WithNoiseStatement).
	noise NoiseStatement
}

// Option is an option of Open.
type Option func(*Store)

// WithNoiseStatement has Get state, through f, the answers' noise of a release stored
// before the curator stated it (OutputPrivacy.Unstated), so that such a study resumes
// and reports as it did. Without it such a release's AnswerNoise is ErrNoiseUnstated.
func WithNoiseStatement(f NoiseStatement) Option { return func(s *Store) { s.noise = f } }

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidName reports an error unless name is 1–100 letters, digits, '.', '_' or '-',
// starting with a letter or digit (it names files in the studies directory).
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("study: name %q must be 1–100 letters, digits, '.', '_' or '-', starting with a letter or digit", name)
	}
	return nil
}

// DefaultDir is $XDG_STATE_HOME/privbo, or ~/.local/state/privbo when XDG_STATE_HOME is
// unset or not absolute (XDG Base Directory Specification).
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "privbo"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("study: no studies directory: %w", err)
	}
	return filepath.Join(home, ".local", "state", "privbo"), nil
}

// Open opens (creating if needed, mode 0700) the studies directory dir and its database.
func Open(dir string, opts ...Option) (*Store, error) {
	if dir == "" {
		return nil, errors.New("study: studies directory must not be empty")
	}
	zs, err := blob.OpenDir(dir) // creates dir
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	path := filepath.Join(dir, DBFile)
	db, err := sqlitedb.Open(path, "foreign_keys(1)")
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	db.SetMaxOpenConns(2)
	s := &Store{dir: dir, db: db, zs: zs}
	for _, o := range opts {
		o(s)
	}
	if err := s.init(); err != nil {
		db.Close()
		return nil, fmt.Errorf("study: %s: %w", path, err)
	}
	return s, nil
}

func (s *Store) init() error {
	ctx := context.Background()
	return s.tx(ctx, func(tx *sql.Tx) error {
		for _, stmt := range ddl {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
		var v int
		switch err := tx.QueryRowContext(ctx, `SELECT version FROM schema_version WHERE id = 1`).Scan(&v); {
		case errors.Is(err, sql.ErrNoRows):
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (id, version) VALUES (1, ?)`, schemaVersion)
			return err
		case err != nil:
			return err
		case v != schemaVersion:
			return fmt.Errorf("database schema version %d, this program supports %d", v, schemaVersion)
		}
		return nil
	})
}

// Dir returns the studies directory.
func (s *Store) Dir() string { return s.dir }

// Close closes the database.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("study: close: %w", err)
	}
	return nil
}

func (s *Store) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE (_txlock)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		tx.Rollback() //nolint:errcheck // fn's error is the one to report
		return err
	}
	return tx.Commit()
}

// Create stores a new study with no release and no observations. It fails with
// ErrExists if the name is taken.
func (s *Store) Create(ctx context.Context, name string, conn Connection, set Settings) (*Study, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := set.Validate(); err != nil {
		return nil, err
	}
	cj, err := json.Marshal(conn)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	sj, err := json.Marshal(set)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	now := time.Now()
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var one int
		switch err := tx.QueryRowContext(ctx, `SELECT 1 FROM studies WHERE name = ?`, name).Scan(&one); {
		case err == nil:
			return fmt.Errorf("%w: %q", ErrExists, name)
		case !errors.Is(err, sql.ErrNoRows):
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO studies (name, created_ns, updated_ns, connection, settings) VALUES (?, ?, ?, ?, ?)`,
			name, now.UnixNano(), now.UnixNano(), string(cj), string(sj))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("study: create %s: %w", name, err)
	}
	return s.Get(ctx, name)
}

// Get returns the study name, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, name string) (*Study, error) {
	row := s.db.QueryRowContext(ctx, `SELECT name, created_ns, updated_ns, done, connection, settings, release, z_sha256,
		initial_index, known_best, budget, last_error FROM studies WHERE name = ?`, name)
	st, err := scanStudy(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("study: %w: %q", ErrNotFound, name)
	}
	if err != nil {
		return nil, fmt.Errorf("study: get %s: %w", name, err)
	}
	if st.Release != nil && st.Release.OutputPrivacy.Unstated() && s.noise != nil {
		if err := s.noise(&st.Release.OutputPrivacy); err != nil {
			return nil, fmt.Errorf("study: %s: the answers' noise: %w", name, err)
		}
	}
	return st, nil
}

func scanStudy(row interface{ Scan(...any) error }) (*Study, error) {
	var (
		st               Study
		created, updated int64
		done             int
		conn, set, bud   string
		rel              sql.NullString
		known            sql.NullFloat64
		zsum             []byte
		initial          int
		lastErr          string
	)
	if err := row.Scan(&st.Name, &created, &updated, &done, &conn, &set, &rel, &zsum, &initial, &known, &bud, &lastErr); err != nil {
		return nil, err
	}
	st.Created, st.Updated = time.Unix(0, created), time.Unix(0, updated)
	st.Done, st.InitialIndex, st.LastError, st.zSum = done != 0, initial, lastErr, zsum
	if err := json.Unmarshal([]byte(conn), &st.Connection); err != nil {
		return nil, fmt.Errorf("connection: %w", err)
	}
	if err := json.Unmarshal([]byte(set), &st.Settings); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	if err := json.Unmarshal([]byte(bud), &st.Budget); err != nil {
		return nil, fmt.Errorf("budget: %w", err)
	}
	if rel.Valid {
		st.Release = new(Release)
		if err := json.Unmarshal([]byte(rel.String), st.Release); err != nil {
			return nil, fmt.Errorf("release: %w", err)
		}
	}
	if known.Valid {
		v := known.Float64
		st.KnownBest = &v
	}
	return &st, nil
}

// update runs one UPDATE of the study's row (and touches updated_ns), failing with
// ErrNotFound if there is no such study; its error reads "study: NAME: why".
func (s *Store) update(ctx context.Context, name, set string, args ...any) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		return updateTx(ctx, tx, name, set, args...)
	})
	if err != nil {
		return fmt.Errorf("study: %s: %w", name, err)
	}
	return nil
}

func updateTx(ctx context.Context, tx *sql.Tx, name, set string, args ...any) error {
	args = append(append(args, time.Now().UnixNano()), name)
	res, err := tx.ExecContext(ctx, `UPDATE studies SET `+set+`, updated_ns = ? WHERE name = ?`, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: %q", ErrNotFound, name)
	}
	return nil
}

// ErrReleased is returned by Reset for a study that already holds a release.
var ErrReleased = errors.New("study already holds a release")

// Reset replaces the connection and settings of a study that holds no release yet
// (created, but refused before its release arrived, for example for an initial index
// past the dataset's rows), so that it can be run again with other settings under the
// same name. It fails with ErrReleased otherwise. The caller decides whether the new
// settings may differ in what they ask the curator to release.
func (s *Store) Reset(ctx context.Context, name string, conn Connection, set Settings) error {
	if err := set.Validate(); err != nil {
		return err
	}
	cj, err := json.Marshal(conn)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	sj, err := json.Marshal(set)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var released bool
		if err := tx.QueryRowContext(ctx, `SELECT release IS NOT NULL FROM studies WHERE name = ?`, name).Scan(&released); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: %q", ErrNotFound, name)
			}
			return err
		}
		if released {
			return ErrReleased
		}
		return updateTx(ctx, tx, name, `connection = ?, settings = ?, last_error = ''`, string(cj), string(sj))
	})
	if err != nil {
		return fmt.Errorf("study: reset %s: %w", name, err)
	}
	return nil
}

// SetConnection replaces the stored connection (a curator that moved, renewed files).
func (s *Store) SetConnection(ctx context.Context, name string, conn Connection) error {
	cj, err := json.Marshal(conn)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return s.update(ctx, name, `connection = ?`, string(cj))
}

// ZPath is the file holding the released matrix of study name.
func (s *Store) ZPath(name string) string { return filepath.Join(s.dir, name+".z") }

// SaveRelease stores the release and its matrix z (row-major rel.Rows × rel.Cols): the
// file first, fsynced, then the row naming it. A study holds one release: saving a
// different one fails; saving the same one again (same id and bytes) does nothing.
func (s *Store) SaveRelease(ctx context.Context, name string, rel Release, z []float64) error {
	if rel.Rows < 1 || rel.Cols < 1 || len(z) != rel.Rows*rel.Cols {
		return fmt.Errorf("study: %s: release of %d values for %d × %d", name, len(z), rel.Rows, rel.Cols)
	}
	if rel.ID == "" {
		return fmt.Errorf("study: %s: release without an id", name)
	}
	st, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	if st.Release != nil {
		h := sha256.New()
		io.Copy(h, matrixio.NewReader(z)) // neither side fails
		if st.Release.ID != rel.ID || !bytes.Equal(st.zSum, h.Sum(nil)) {
			return fmt.Errorf("study: %s already holds release %s; the curator now sent %s (a different matrix)", name, st.Release.ID, rel.ID)
		}
		return nil
	}
	// A file without a committed row is what a crash between the two writes leaves.
	if err := s.zs.Delete(ctx, name+".z"); err != nil {
		return fmt.Errorf("study: %w", err)
	}
	sum, err := s.zs.Put(ctx, name+".z", matrixio.NewReader(z))
	if err != nil {
		return fmt.Errorf("study: %s: %w", name, err)
	}
	rj, err := json.Marshal(rel)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	return s.update(ctx, name, `release = ?, z_sha256 = ?`, string(rj), sum)
}

// LoadZ reads the released matrix of st and checks it against the stored SHA-256.
func (s *Store) LoadZ(st *Study) ([]float64, error) {
	if st.Release == nil {
		return nil, fmt.Errorf("study: %s has no release yet", st.Name)
	}
	f, err := os.Open(s.ZPath(st.Name))
	if err != nil {
		return nil, fmt.Errorf("study: %s: %w", st.Name, err)
	}
	defer f.Close()
	// Decoded as it is read, so that the matrix is held once (10⁷ × 20 is 1.6 GB).
	h := sha256.New()
	z := hugepage.Floats(st.Release.Rows * st.Release.Cols) // as a received projection
	if err := matrixio.ReadFloat64s(z, io.TeeReader(f, h)); err != nil {
		return nil, fmt.Errorf("study: %s: %s: %w", st.Name, s.ZPath(st.Name), err)
	}
	if !bytes.Equal(h.Sum(nil), st.zSum) {
		return nil, fmt.Errorf("study: %s: %s does not match the stored SHA-256 of release %s", st.Name, s.ZPath(st.Name), st.Release.ID)
	}
	return z, nil
}

// SetInitialIndex records the first row of the study. Once set it cannot change.
func (s *Store) SetInitialIndex(ctx context.Context, name string, i int) error {
	if i < 0 {
		return fmt.Errorf("study: %s: initial index must be ≥ 0, got %d", name, i)
	}
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var cur int
		if err := tx.QueryRowContext(ctx, `SELECT initial_index FROM studies WHERE name = ?`, name).Scan(&cur); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		} else if err != nil {
			return err
		}
		if cur >= 0 && cur != i {
			return fmt.Errorf("initial index is already %d, not %d", cur, i)
		}
		return updateTx(ctx, tx, name, `initial_index = ?`, i)
	})
	if err != nil {
		return fmt.Errorf("study: %s: %w", name, err)
	}
	return nil
}

// SetKnownBest records the optimum max_i f(x_i) (min_i when the study minimises), known
// in simulations, for the regret curve.
func (s *Store) SetKnownBest(ctx context.Context, name string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Errorf("study: %s: known best must be finite, got %g", name, v)
	}
	return s.update(ctx, name, `known_best = ?`, v)
}

// SetError records the error that stopped a run ("" clears it).
func (s *Store) SetError(ctx context.Context, name, msg string) error {
	return s.update(ctx, name, `last_error = ?`, msg)
}

// Finish marks the study done.
func (s *Store) Finish(ctx context.Context, name string) error {
	return s.update(ctx, name, `done = 1, last_error = ''`)
}

// SetIterations changes the study's number of iterations T to n, which must be at least
// the number of observations recorded (checked in the same transaction as the update).
// Raising T past the recorded count marks the study not done, so that the next run
// continues it; otherwise Done is left as it is.
func (s *Store) SetIterations(ctx context.Context, name string, n int) error {
	err := s.tx(ctx, func(tx *sql.Tx) error {
		var sj string
		var count int
		if err := tx.QueryRowContext(ctx, `SELECT settings, (SELECT COUNT(*) FROM observations WHERE study = ?) FROM studies WHERE name = ?`,
			name, name).Scan(&sj, &count); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		} else if err != nil {
			return err
		}
		if n < count {
			return fmt.Errorf("%d iterations are already recorded, so iterations must be at least %d, got %d", count, count, n)
		}
		var set Settings
		if err := json.Unmarshal([]byte(sj), &set); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
		set.Iterations = n
		if err := set.Validate(); err != nil {
			return err
		}
		b, err := json.Marshal(set)
		if err != nil {
			return err
		}
		if n > count {
			return updateTx(ctx, tx, name, `settings = ?, done = 0`, string(b))
		}
		return updateTx(ctx, tx, name, `settings = ?`, string(b))
	})
	if err != nil {
		return fmt.Errorf("study: %s: iterations: %w", name, err)
	}
	return nil
}

// Record appends one round of observations and the budget reported with them, in one
// transaction. Iterations must continue the stored sequence (the first is one more than
// the number stored) without gaps, values must be finite and indices within the release.
func (s *Store) Record(ctx context.Context, name string, obs []Observation, budget Budget) error {
	if len(obs) == 0 {
		return fmt.Errorf("study: %s: record of no observations", name)
	}
	bj, err := json.Marshal(budget)
	if err != nil {
		return fmt.Errorf("study: %w", err)
	}
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var count int
		var rel sql.NullString
		if err := tx.QueryRowContext(ctx, `SELECT release, (SELECT COUNT(*) FROM observations WHERE study = ?) FROM studies WHERE name = ?`,
			name, name).Scan(&rel, &count); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrNotFound, name)
		} else if err != nil {
			return err
		}
		if !rel.Valid {
			return errors.New("observations before the release")
		}
		var r Release
		if err := json.Unmarshal([]byte(rel.String), &r); err != nil {
			return fmt.Errorf("release: %w", err)
		}
		for k, o := range obs {
			switch {
			case o.Iteration != count+1+k:
				return fmt.Errorf("observation for iteration %d, want %d (%d stored)", o.Iteration, count+1+k, count)
			case o.Index < 0 || o.Index >= r.Rows:
				return fmt.Errorf("row %d out of range [0, %d)", o.Index, r.Rows)
			case math.IsNaN(o.Value) || math.IsInf(o.Value, 0):
				return fmt.Errorf("value %g of row %d is not finite", o.Value, o.Index)
			case o.Round < 1:
				return fmt.Errorf("round %d, want ≥ 1", o.Round)
			}
			ts := o.Time
			if ts.IsZero() {
				ts = time.Now()
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO observations (study, iteration, round, row_index, value, replayed, created_ns)
				VALUES (?, ?, ?, ?, ?, ?, ?)`, name, o.Iteration, o.Round, o.Index, o.Value, boolInt(o.Replayed), ts.UnixNano()); err != nil {
				return err
			}
		}
		return updateTx(ctx, tx, name, `budget = ?`, string(bj))
	})
	if err != nil {
		return fmt.Errorf("study: %s: record: %w", name, err)
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Observations returns the study's observations in iteration order.
func (s *Store) Observations(ctx context.Context, name string) ([]Observation, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT iteration, round, row_index, value, replayed, created_ns
		FROM observations WHERE study = ? ORDER BY iteration`, name)
	if err != nil {
		return nil, fmt.Errorf("study: %s: observations: %w", name, err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var o Observation
		var rep int
		var ns int64
		if err := rows.Scan(&o.Iteration, &o.Round, &o.Index, &o.Value, &rep, &ns); err != nil {
			return nil, fmt.Errorf("study: %s: observations: %w", name, err)
		}
		o.Replayed, o.Time = rep != 0, time.Unix(0, ns)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("study: %s: observations: %w", name, err)
	}
	return out, nil
}

// List summarises every study, by name.
func (s *Store) List(ctx context.Context) ([]Summary, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT name, created_ns, updated_ns, done, connection, settings, release, z_sha256,
		initial_index, known_best, budget, last_error FROM studies ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("study: list: %w", err)
	}
	var studies []*Study
	for rows.Next() {
		st, err := scanStudy(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("study: list: %w", err)
		}
		studies = append(studies, st)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return nil, fmt.Errorf("study: list: %w", err)
	}
	out := make([]Summary, 0, len(studies))
	for _, st := range studies {
		obs, err := s.Observations(ctx, st.Name)
		if err != nil {
			return nil, err
		}
		sum := Summary{Name: st.Name, Done: len(obs), Total: st.Settings.Iterations, BestIndex: -1, Updated: st.Updated, Error: st.LastError,
			Direction: st.Settings.Direction.String()}
		if st.Release != nil {
			sum.Dataset = st.Release.Dataset
		}
		if bi, bv := Best(obs, st.Settings.Direction); bi >= 0 {
			sum.BestIndex, sum.BestValue = bi, &bv
		}
		switch {
		case st.Done:
			sum.State = "done"
		case s.locked(st.Name):
			sum.State = "running"
		case st.Release == nil:
			sum.State = "new"
		default:
			sum.State = "stopped"
		}
		out = append(out, sum)
	}
	return out, nil
}

// Best returns the row and value of the best observation in direction d (the largest
// or the smallest; the first on ties), or (−1, NaN) for none.
func Best(obs []Observation, d Direction) (int, float64) {
	bi, bv := -1, math.NaN()
	for _, o := range obs {
		if bi < 0 || d.Better(o.Value, bv) {
			bi, bv = o.Index, o.Value
		}
	}
	return bi, bv
}

// Lock takes the study's exclusive lock for this process, failing with ErrLocked if
// another holds it. The kernel releases it when the process dies; call unlock to release
// it earlier.
func (s *Store) Lock(name string) (unlock func(), err error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, name+".lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("study: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("study: %s: %w", name, ErrLocked)
		}
		return nil, fmt.Errorf("study: lock %s: %w", name, err)
	}
	return func() { f.Close() }, nil
}

// locked reports whether some process holds the study's lock.
func (s *Store) locked(name string) bool {
	unlock, err := s.Lock(name)
	if err != nil {
		return errors.Is(err, ErrLocked)
	}
	unlock()
	return false
}
