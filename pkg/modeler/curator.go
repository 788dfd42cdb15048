package modeler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/privbo/privbo/pkg/study"
)

// Curator is what a study needs of the curator, in the modeler's own terms. The modeler
// knows nothing of the transport: pkg/curatorclient implements Curator over the gRPC API
// (with its waiting, retries and the checks of the streamed matrix), and pkg/simulate
// over an in-process *curator.Curator. A study runs the same code against either.
type Curator interface {
	// DatasetInfo describes the dataset and the caller's budget. It is the first request
	// of a run and fails fast: an unreachable curator is reported at once, as an error
	// that wraps ErrUnreachable.
	DatasetInfo(ctx context.Context) (*DatasetInfo, error)
	// Quote asks the curator what a study would cost and receive, before anything is
	// charged (see Quote). It charges nothing.
	Quote(ctx context.Context, req QuoteRequest) (*Quote, error)
	// ReleaseProjection receives the projection req asks for (charged once; the
	// curator replays a release it made before at no cost), with req.WithAnswers the
	// caller's answers paid in the same charge.
	ReleaseProjection(ctx context.Context, req ProjectionRequest) (*Projection, error)
	// Query asks for the answers at rows, in that order, and returns them with the
	// budget after the charge. A query is idempotent (rows already released come back
	// as replays at no cost), so an implementation may ask again after a transient
	// failure; it waits as long as the curator is expected back and gives up when ctx
	// ends or the curator refuses the request (a budget refusal among them).
	Query(ctx context.Context, rows []int) ([]Answer, study.Budget, error)
}

// ErrUnreachable is wrapped by the errors of a Curator that could not reach the curator
// at all (a wrong address, TLS files the curator refuses, a curator that is down).
var ErrUnreachable = errors.New("cannot reach the curator")

// ErrWideProjection is returned, before anything is charged, for a projection
// dimension r above the dataset's number of features (Config.WideProjection).
var ErrWideProjection = errors.New("projection dimension above the number of features")

// DatasetInfo describes the curator's dataset, how it releases projections and answers,
// and the caller's budget.
type DatasetInfo struct {
	// Name is the dataset's display name; DatasetID its stable id ("" from curators
	// without one).
	Name, DatasetID string
	Rows            int
	// Dimension is the number of features d (0 from a curator that does not say).
	Dimension int
	// MaxQueryIndices is the most rows one query may ask for (0: no limit).
	MaxQueryIndices int
	// ProjectionMechanism and ProjectionRelation describe projection releases: the
	// mechanism and the neighbour relation their (ε, δ) is stated for.
	ProjectionMechanism, ProjectionRelation string
	// ProtectedUnit names what a row stands for (a patient, a visit).
	ProtectedUnit string
	// OutputPrivacy is how the answers are released, with its relation and guarantee.
	OutputPrivacy study.OutputPrivacy
	// Guarantee is the curator's whole statement in plain words.
	Guarantee string
	// Budget is the caller's budget under the projection's relation.
	Budget study.Budget
}

// ProjectionRequest asks for a projection of dimension R at (Epsilon, Delta); Label
// distinguishes independent releases with equal parameters. WithAnswers pays the
// caller's answers with it, in one charge: both or neither.
type ProjectionRequest struct {
	R              int
	Epsilon, Delta float64
	Label          string
	WithAnswers    bool
}

// Projection is a released matrix Z.
type Projection struct {
	ReleaseID  string
	Rows, Cols int
	// Replayed is true when the release had been made before (no new cost).
	Replayed bool
	// Guarantee is the release's guarantee as the curator states it.
	Guarantee string
	// NoiseSD is the standard deviation σ of the independent Gaussian noise in every
	// entry of Z (the Gaussian projection mechanism), 0 when Z carries none (the lifted
	// mechanism) or the curator does not say. It is public (it depends only on ε, δ,
	// the shape and the projection's sensitivity), and the GP models it
	// (Config.ProjectionNoise).
	NoiseSD float64
	// WholePatient is the release's whole-patient cost as the curator states it (nil
	// when it does not).
	WholePatient *study.WholePatient
	// Budget is the caller's budget after the release.
	Budget study.Budget
	// Z is row-major Rows × Cols.
	Z []float64
}

// Answer is the curator's answer at one row.
type Answer struct {
	Index int
	Value float64
	// Replayed is true when this value had been released to the caller before.
	Replayed bool
	// Clip is the range the curator clipped the value to before its noise: the range
	// asked for (ClipQuerier) when the row was first answered to the caller, the public
	// range otherwise; zero when the curator does not say (exact answers, older curators).
	Clip Clip
}

// Clip is a range [Lower, Upper] inside the curator's public output range to which the
// caller asks its answers to be clipped (Config.Clip): the curator then adds noise
// calibrated to Upper − Lower instead of the public range's width, at the same ε and
// the same one charge (pkg/curator's Clip explains why). The zero Clip is the public
// range.
type Clip struct{ Lower, Upper float64 }

// IsZero reports whether c is the zero Clip (the public range).
func (c Clip) IsZero() bool { return c == Clip{} }

// String is "LOWER,UPPER" (ParseClip's form), "" for the zero Clip.
func (c Clip) String() string {
	if c.IsZero() {
		return ""
	}
	return strconv.FormatFloat(c.Lower, 'g', -1, 64) + "," + strconv.FormatFloat(c.Upper, 'g', -1, 64)
}

// ParseClip reads "LOWER,UPPER" (finite, lower < upper); "" and "public" are the zero
// Clip, the public range.
func ParseClip(s string) (Clip, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "public" {
		return Clip{}, nil
	}
	lo, hi, ok := strings.Cut(s, ",")
	l, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
	h, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
	if !ok || err1 != nil || err2 != nil || math.IsInf(l, 0) || math.IsInf(h, 0) || !(l < h) {
		return Clip{}, fmt.Errorf("modeler: clip range %q: want LOWER,UPPER with finite lower < upper, or public", s)
	}
	return Clip{l, h}, nil
}

// QueryOptions are what a query may ask beyond its rows.
type QueryOptions struct {
	// Clip is the range the fresh answers are clipped to (the zero Clip: the public
	// range).
	Clip Clip
	// Pass ≥ 0 is the answering pass: pass 0 is the study's answers, pass p ≥ 1 a
	// confirmation pass that answers rows again with fresh noise, paid by a charge of
	// its own (Config.ConfirmRows). Within a pass each row is answered once.
	Pass int
}

// OptionQuerier is a Curator that takes QueryOptions (pkg/curatorclient and
// pkg/simulate's Local are). QueryWith is Query with opt; rows released before in the
// same pass come back as they were.
type OptionQuerier interface {
	QueryWith(ctx context.Context, rows []int, opt QueryOptions) ([]Answer, study.Budget, error)
}
