// Package curatorclient implements modeler.Curator over the curator's gRPC API
// (proto/privbo/curator/v1). It holds the one retry policy of the modeler's side:
//
//   - GetDatasetInfo, the first request of a run, fails fast (no WaitForReady, at most
//     InfoTimeout), so that a wrong address or refused TLS files are reported at once;
//     an unreachable curator is reported as modeler.ErrUnreachable.
//   - Query waits for the curator to be reachable (grpc.WaitForReady) and asks again
//     with exponential backoff (100 ms doubling to 5 s) when the connection breaks
//     mid-query, as during a curator restart: a query is idempotent — rows already
//     released come back as replays at no cost — so asking again is safe.
//   - Every call waits and asks again when the curator's rate or concurrency limits
//     refuse it with RESOURCE_EXHAUSTED and an errdetails.RetryInfo, as long as that
//     asks. A refusal by the privacy budget carries no RetryInfo and is returned at
//     once: waiting would not change it.
//
// The projection arrives as a header, chunks of rows and a trailer with the SHA-256 of
// the chunks' bytes (FetchProjection); order, sizes and the checksum are checked before
// the matrix is used. Errors wrap the gRPC status, so status.Code still reads it; a
// refusal carrying the curator's google.rpc.ErrorInfo comes back as a *refusal.Error
// (Refused), so that callers branch on its reason, never on the message.
package curatorclient

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/internal/hugepage"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/modeler"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/study"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// InfoTimeout bounds GetDatasetInfo, the fail-fast first request of a run.
const InfoTimeout = 30 * time.Second

// Client is a modeler.Curator over a curatorv1.CuratorServiceClient.
type Client struct {
	c curatorv1.CuratorServiceClient
}

var _ modeler.Curator = (*Client)(nil)

// New returns the modeler.Curator of client.
func New(client curatorv1.CuratorServiceClient) *Client { return &Client{c: client} }

// DatasetInfo implements modeler.Curator.
func (c *Client) DatasetInfo(ctx context.Context) (*modeler.DatasetInfo, error) {
	info, err := retryRateLimited(ctx, func() (*curatorv1.GetDatasetInfoResponse, error) {
		ictx, cancel := context.WithTimeout(ctx, InfoTimeout)
		defer cancel()
		return c.c.GetDatasetInfo(ictx, &curatorv1.GetDatasetInfoRequest{})
	})
	if err != nil {
		if code := status.Code(err); ctx.Err() == nil && (code == codes.Unavailable || code == codes.DeadlineExceeded) {
			return nil, fmt.Errorf("%w: %w", modeler.ErrUnreachable, err)
		}
		return nil, Refused(err)
	}
	op := info.GetOutputPrivacy()
	out := &modeler.DatasetInfo{
		Name: info.GetName(), DatasetID: info.GetDatasetId(), Rows: int(min(info.GetRows(), uint64(maxInt))),
		Dimension:           int(info.GetDimension()),
		MaxQueryIndices:     int(info.GetMaxQueryIndices()),
		ProjectionMechanism: info.GetProjectionMechanism(), ProjectionRelation: info.GetProjectionRelation(),
		ProtectedUnit: info.GetProtectedUnit(), Guarantee: info.GetGuarantee(),
		OutputPrivacy: study.OutputPrivacy{Mechanism: op.GetMechanism(), EpsilonPerIndex: op.GetEpsilonPerIndex(),
			DeltaPerIndex: op.GetDeltaPerIndex(), Lower: op.GetLower(), Upper: op.GetUpper(),
			Relation: op.GetRelation(), Guarantee: op.GetGuarantee()},
		Budget: Budget(info.GetBudget()),
	}
	if err := stateNoise(&out.OutputPrivacy, op.GetNoise(), op.GetNoiseSd()); err != nil {
		return nil, err
	}
	return out, nil
}

const maxInt = int(^uint(0) >> 1)

// ReleaseProjection implements modeler.Curator (FetchProjection).
func (c *Client) ReleaseProjection(ctx context.Context, req modeler.ProjectionRequest) (*modeler.Projection, error) {
	if req.R < 1 || uint64(req.R) > 1<<32-1 {
		return nil, fmt.Errorf("curatorclient: projection dimension %d out of range", req.R)
	}
	p, err := FetchProjection(ctx, c.c, &curatorv1.ReleaseProjectionRequest{
		Dimension: uint32(req.R), Epsilon: req.Epsilon, Delta: req.Delta, Label: req.Label, WithAnswers: req.WithAnswers,
	})
	if err != nil {
		return nil, Refused(err)
	}
	out := &modeler.Projection{ReleaseID: p.ReleaseID, Rows: p.Rows, Cols: p.Cols, Replayed: p.Replayed,
		Guarantee: p.Guarantee, NoiseSD: p.NoiseSD, Budget: Budget(p.Budget), Z: p.Z}
	if w := p.Header.GetWholePatient(); w != nil {
		out.WholePatient = &study.WholePatient{Bounded: w.GetBounded(), Epsilon: w.GetEpsilon(), Delta: w.GetDelta()}
	}
	return out, nil
}

// Quote implements modeler.Curator (QuoteStudy). Like GetDatasetInfo it fails fast,
// waiting only as the curator's rate limits ask.
func (c *Client) Quote(ctx context.Context, req modeler.QuoteRequest) (*modeler.Quote, error) {
	if req.R < 0 || uint64(req.R) > 1<<32-1 {
		return nil, fmt.Errorf("curatorclient: projection dimension %d out of range", req.R)
	}
	m, err := retryRateLimited(ctx, func() (*curatorv1.QuoteStudyResponse, error) {
		return c.c.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{Dimension: uint32(req.R), Epsilon: req.Epsilon, Delta: req.Delta,
			Label: req.Label, WithAnswers: req.WithAnswers})
	})
	if err != nil {
		return nil, fmt.Errorf("curatorclient: quote: %w", Refused(err))
	}
	return QuoteOf(m), nil
}

// QuoteOf is the modeler's form of a QuoteStudyResponse.
func QuoteOf(m *curatorv1.QuoteStudyResponse) *modeler.Quote {
	p, a, d := m.GetProjection(), m.GetAnswers(), m.GetDefaultStudy()
	q := &modeler.Quote{
		R: int(p.GetDimension()), RChosen: p.GetDimensionChosen(), Epsilon: p.GetEpsilon(), Delta: p.GetDelta(),
		DefaultEpsilon: p.GetDefaultEpsilon(), DefaultDelta: p.GetDefaultDelta(), Label: p.GetLabel(),
		Mechanism: p.GetMechanism(), Relation: p.GetRelation(), NoiseSD: p.GetNoiseSd(),
		WholePatientEpsilon: p.GetWholePatientEpsilon(), WholePatientUnits: p.GetWholePatientUnits(), WholePatient: p.GetWholePatient(),
		ProjectionPaid: p.GetPaid(),
		Answers: modeler.AnswersQuote{Included: a.GetIncluded(), Mechanism: a.GetMechanism(), Relation: a.GetRelation(),
			Epsilon: a.GetEpsilon(), Delta: a.GetDelta(), Lower: a.GetLower(), Upper: a.GetUpper(), NoiseSD: a.GetNoiseSd(), Paid: a.GetPaid()},
		Fits: m.GetFits(), Refusal: m.GetRefusal(),
		DefaultStudy: modeler.DefaultStudy{ProjectionEpsilon: d.GetProjectionEpsilon(), ProjectionDelta: d.GetProjectionDelta(),
			AnswersEpsilon: d.GetAnswersEpsilon(), AnswersDelta: d.GetAnswersDelta(),
			PerIdentity: int(d.GetPerIdentity()), Dataset: int(d.GetDataset()), DatasetLeft: int(d.GetDatasetLeft())},
	}
	// A quote is for reading: one whose noise cannot be stated keeps the wire's figures.
	op := study.OutputPrivacy{Mechanism: a.GetMechanism(), EpsilonPerIndex: a.GetEpsilon(), DeltaPerIndex: a.GetDelta(),
		Lower: a.GetLower(), Upper: a.GetUpper()}
	_ = stateNoise(&op, a.GetNoise(), a.GetNoiseSd()) // see above
	q.Answers.Noise = op.Noise
	if op.NoiseSD > 0 {
		q.Answers.NoiseSD = op.NoiseSD
	}
	if c := p.GetDimensionChoice(); c != nil {
		q.RChoice = &modeler.AutoRChoice{R: q.R, Rule: c.GetRule(), NoiseSD: c.GetNoiseSd(), NoiseShare: c.GetNoiseShare(),
			Distortion: c.GetDistortion(), TypicalSquaredDistance: c.GetTypicalSquaredDistance()}
	}
	for _, c := range m.GetCharges() {
		q.Charges = append(q.Charges, modeler.RelationCharge{Relation: c.GetRelation(), Epsilon: c.GetEpsilon(), Delta: c.GetDelta(),
			EpsilonAvailable: c.GetEpsilonAvailable(), DeltaAvailable: c.GetDeltaAvailable(), Fits: c.GetFits(), Scope: c.GetScope()})
	}
	return q
}

// Query implements modeler.Curator, waiting for the curator and asking again as the
// package documentation says.
func (c *Client) Query(ctx context.Context, rows []int) ([]modeler.Answer, study.Budget, error) {
	return c.QueryWith(ctx, rows, modeler.QueryOptions{})
}

// QueryWith implements modeler.OptionQuerier: Query with the fresh answers clipped to
// opt.Clip (QueryRequest.clip; the zero Clip is the public range) in answering pass
// opt.Pass (QueryRequest.confirmation_pass).
func (c *Client) QueryWith(ctx context.Context, rows []int, opt modeler.QueryOptions) ([]modeler.Answer, study.Budget, error) {
	if opt.Pass < 0 {
		return nil, study.Budget{}, fmt.Errorf("curatorclient: pass %d is negative", opt.Pass)
	}
	req := &curatorv1.QueryRequest{Indices: make([]uint64, len(rows)), ConfirmationPass: uint32(min(opt.Pass, math.MaxUint32))}
	if !opt.Clip.IsZero() {
		req.Clip = &curatorv1.ClipRange{Lower: opt.Clip.Lower, Upper: opt.Clip.Upper}
	}
	for k, i := range rows {
		if i < 0 {
			return nil, study.Budget{}, fmt.Errorf("curatorclient: row %d is negative", i)
		}
		req.Indices[k] = uint64(i)
	}
	backoff := 100 * time.Millisecond
	for {
		resp, err := c.c.Query(ctx, req, grpc.WaitForReady(true))
		if err == nil {
			obs := resp.GetObservations()
			out := make([]modeler.Answer, len(obs))
			for k, o := range obs {
				out[k] = modeler.Answer{Index: int(min(o.GetIndex(), uint64(maxInt))), Value: o.GetValue(), Replayed: o.GetReplayed(),
					Clip: modeler.Clip{Lower: o.GetClip().GetLower(), Upper: o.GetClip().GetUpper()}}
			}
			return out, Budget(resp.GetBudget()), nil
		}
		if ctx.Err() != nil {
			return nil, study.Budget{}, err
		}
		wait, ok := retryDelay(err)
		if !ok {
			if status.Code(err) != codes.Unavailable {
				return nil, study.Budget{}, Refused(err)
			}
			wait, backoff = backoff, min(2*backoff, 5*time.Second)
		}
		if sleep(ctx, wait) != nil {
			return nil, study.Budget{}, err
		}
	}
}

// Refused returns err as a *refusal.Error, wrapping err, when its gRPC status carries
// the curator's google.rpc.ErrorInfo (domain refusal.Domain): its reason and metadata.
// Any other error, and nil, is returned as it is.
func Refused(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	for _, d := range st.Details() {
		if info, isInfo := d.(*errdetails.ErrorInfo); isInfo && info.GetDomain() == refusal.Domain {
			return &refusal.Error{Reason: refusal.Reason(info.GetReason()), Metadata: info.GetMetadata(), Err: err}
		}
	}
	return err
}

// Budget is the modeler's form of a budget message (its feature-unit fields).
func Budget(b *curatorv1.Budget) study.Budget {
	return study.Budget{Identity: b.GetIdentity(), EpsilonLimit: b.GetEpsilonLimit(), DeltaLimit: b.GetDeltaLimit(),
		EpsilonSpent: b.GetEpsilonSpent(), DeltaSpent: b.GetDeltaSpent(),
		EpsilonRemaining: b.GetEpsilonRemaining(), DeltaRemaining: b.GetDeltaRemaining()}
}

// retryDelay returns how long a RESOURCE_EXHAUSTED status asks the caller to wait before
// trying again, from its errdetails.RetryInfo (the curator's rate and concurrency
// limits); ok is false for any other error. A refusal by the privacy budget carries no
// RetryInfo: waiting would not change it.
func retryDelay(err error) (d time.Duration, ok bool) {
	st, isStatus := status.FromError(err)
	if !isStatus || st.Code() != codes.ResourceExhausted {
		return 0, false
	}
	for _, det := range st.Details() {
		if ri, isRetry := det.(*errdetails.RetryInfo); isRetry {
			return max(ri.GetRetryDelay().AsDuration(), minRetryDelay), true
		}
	}
	return 0, false
}

// minRetryDelay is the least wait before a retry the curator asked for.
const minRetryDelay = 10 * time.Millisecond

// sleep waits d, or until ctx ends (returning its error).
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryRateLimited calls call until it returns anything but a rate-limit refusal,
// waiting between calls as long as the refusal's RetryInfo asks (see retryDelay). If
// ctx ends while waiting it returns the last refusal.
func retryRateLimited[T any](ctx context.Context, call func() (T, error)) (T, error) {
	for {
		v, err := call()
		if d, ok := retryDelay(err); ok && sleep(ctx, d) == nil {
			continue
		}
		return v, err
	}
}

// Projection is a released matrix as received.
type Projection struct {
	ReleaseID  string
	Rows, Cols int
	Replayed   bool
	Guarantee  string
	// NoiseSD is σ of the Gaussian noise in every entry (ProjectionHeader.noise_sd; 0
	// for the lifted mechanism and from curators that do not state it).
	NoiseSD float64
	Budget  *curatorv1.Budget
	// Header is the release's header as received (its whole-patient cost, …).
	Header *curatorv1.ProjectionHeader
	// Z is row-major Rows × Cols.
	Z []float64
}

// FetchProjection receives a projection release, checking chunk order, sizes and the
// trailer's SHA-256. When the curator's rate limits ask it to wait, it waits and asks
// again (a release already made is replayed at no cost).
func FetchProjection(ctx context.Context, client curatorv1.CuratorServiceClient, req *curatorv1.ReleaseProjectionRequest) (*Projection, error) {
	return retryRateLimited(ctx, func() (*Projection, error) { return fetchProjection(ctx, client, req) })
}

func fetchProjection(ctx context.Context, client curatorv1.CuratorServiceClient, req *curatorv1.ReleaseProjectionRequest) (*Projection, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.ReleaseProjection(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("curatorclient: projection: %w", err)
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("curatorclient: projection: %w", err)
	}
	h := msg.GetHeader()
	if h == nil {
		return nil, errors.New("curatorclient: projection stream did not start with a header")
	}
	const maxElems = 1 << 31
	if h.GetRows() == 0 || h.GetCols() == 0 || h.GetRows()*uint64(h.GetCols()) > maxElems {
		return nil, fmt.Errorf("curatorclient: projection header announces an unusable %d × %d matrix", h.GetRows(), h.GetCols())
	}
	p := &Projection{ReleaseID: h.GetReleaseId(), Rows: int(h.GetRows()), Cols: int(h.GetCols()), Replayed: h.GetReplayed(),
		Guarantee: h.GetGuarantee(), NoiseSD: h.GetNoiseSd(), Budget: h.GetBudget(), Header: h}
	if sd := p.NoiseSD; !(sd >= 0) || math.IsInf(sd, 0) {
		return nil, fmt.Errorf("curatorclient: projection header states an unusable noise sd %g", sd)
	}
	p.Z = hugepage.Floats(p.Rows * p.Cols)
	sum := sha256.New()
	next := 0
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil, errors.New("curatorclient: projection stream ended without a trailer")
		}
		if err != nil {
			return nil, fmt.Errorf("curatorclient: projection: %w", err)
		}
		switch part := msg.GetPart().(type) {
		case *curatorv1.ReleaseProjectionResponse_Chunk:
			c := part.Chunk
			rows := int(c.GetRowCount())
			if c.GetFirstRow() != uint64(next) || rows <= 0 || next+rows > p.Rows {
				return nil, fmt.Errorf("curatorclient: projection chunk for rows [%d, %d) out of order (expected row %d of %d)", c.GetFirstRow(), c.GetFirstRow()+uint64(rows), next, p.Rows)
			}
			if err := matrixio.DecodeFloat64s(p.Z[next*p.Cols:(next+rows)*p.Cols], c.GetData()); err != nil {
				return nil, fmt.Errorf("curatorclient: projection chunk at row %d: %w", next, err)
			}
			sum.Write(c.GetData())
			next += rows
		case *curatorv1.ReleaseProjectionResponse_Trailer:
			if next != p.Rows {
				return nil, fmt.Errorf("curatorclient: projection stream ended after %d of %d rows", next, p.Rows)
			}
			if string(sum.Sum(nil)) != string(part.Trailer.GetSha256()) {
				return nil, errors.New("curatorclient: projection checksum mismatch; the matrix was damaged in transit")
			}
			return p, nil
		default:
			return nil, errors.New("curatorclient: unexpected message in projection stream")
		}
	}
}
