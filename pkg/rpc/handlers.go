// Package rpc is the curator's gRPC adapter: its handlers translate the protobuf API
// (proto/privbo/curator/v1) to pkg/curator and pkg/jobs and back, and domain errors to
// status codes with google.rpc.ErrorInfo reasons (package refusal). No privacy logic
// lives here; pkg/server registers the service (New) on its gRPC server.
package rpc

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/jobs"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/matrixio"
	"github.com/privbo/privbo/pkg/memory"
	"github.com/privbo/privbo/pkg/noise"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/refusal"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// New returns the curator service over gRPC for cur, with the tuning jobs of jm (nil
// when jobs are not enabled); limits are the ledger's limits, which name a refusal's
// limit when the refusing code did not; streams bounds each identity's release streams
// (zero fields take the defaults).
func New(cur *curator.Curator, jm *jobs.Manager, limits ledger.Limits, streams Streams, log *zap.Logger) curatorv1.CuratorServiceServer {
	streams.PerIdentity = cmp.Or(streams.PerIdentity, DefaultStreamsPerIdentity)
	streams.IdleTimeout = cmp.Or(streams.IdleTimeout, DefaultStreamIdleTimeout)
	return &handlers{cur: cur, jobs: jm, log: log, limits: limits, streams: streams, open: map[string]int{}}
}

// Streams bounds each identity's release streams (ReleaseProjection), each of which
// holds memory of the curator's releases (curator.Config.Memory) while it is open.
type Streams struct {
	// PerIdentity is the most release streams one identity may have open at once; one
	// more is refused (RESOURCE_EXHAUSTED with a RetryInfo) before anything is computed
	// or charged. Default DefaultStreamsPerIdentity.
	PerIdentity int
	// IdleTimeout is how long a stream may wait for its client to read: one whose
	// client reads nothing for as long is cut (DEADLINE_EXCEEDED), and its memory given
	// back. Default DefaultStreamIdleTimeout.
	IdleTimeout time.Duration
}

// The defaults of Streams: with them one identity holds at most 4 streams of at most
// 9 MiB each (curator's streamNeed), for at most 30 s after its client stops reading.
const (
	DefaultStreamsPerIdentity = 4
	DefaultStreamIdleTimeout  = 30 * time.Second
)

// handlers adapts the curator service to gRPC: protobuf ⇄ domain types, errors ⇄ status
// codes. No privacy logic lives here.
type handlers struct {
	curatorv1.UnimplementedCuratorServiceServer
	cur  *curator.Curator
	jobs *jobs.Manager // nil when jobs are not enabled
	log  *zap.Logger
	// limits are the ledger's limits, which name a refusal's limit when the
	// refusing code did not (see ledger.BudgetError.ZeroDeltaLimit).
	limits ledger.Limits

	streams Streams
	mu      sync.Mutex
	open    map[string]int // release streams open per identity
}

func identity(ctx context.Context) string {
	id, ok := transport.IdentityFromContext(ctx)
	if !ok {
		return transport.AnonymousIdentity
	}
	return id
}

func (h *handlers) GetDatasetInfo(ctx context.Context, _ *curatorv1.GetDatasetInfoRequest) (*curatorv1.GetDatasetInfoResponse, error) {
	info, err := h.cur.Info(ctx, identity(ctx))
	if err != nil {
		return nil, h.status(ctx, err)
	}
	budget, err := h.budgetAll(ctx, info.Budget)
	if err != nil {
		return nil, h.status(ctx, err)
	}
	o := info.Output
	return &curatorv1.GetDatasetInfoResponse{
		Name: info.Name, DatasetId: info.DatasetID, Rows: uint64(info.Rows), Dimension: uint32(info.Dim),
		Budget: budget,
		OutputPrivacy: &curatorv1.OutputPrivacy{
			Mechanism: o.Mechanism, EpsilonPerIndex: o.Epsilon, DeltaPerIndex: o.Delta, Lower: o.Lower, Upper: o.Upper,
			Relation: string(info.OutputRelation), Guarantee: info.OutputGuarantee,
			ExactAnswersMaxRows: uint32(min(info.ExactAnswersMaxRows, math.MaxUint32)),
			NoiseSd:             info.OutputNoiseSD, Noise: noiseFamilyProto(info.OutputNoise),
		},
		ProtectedUnit:       info.ProtectedUnit,
		MaxQueryIndices:     uint32(info.MaxQueryIndices),
		ProjectionMechanism: info.ProjectionMechanism,
		ProjectionRelation:  string(info.ProjectionRelation),
		Guarantee:           info.Guarantee,
	}, nil
}

func (h *handlers) GetBudget(ctx context.Context, _ *curatorv1.GetBudgetRequest) (*curatorv1.GetBudgetResponse, error) {
	// The Budget's own fields are the feature-unit balance: the relation the projection
	// is stated for, and the one record-level releases count towards as well.
	bal, err := h.cur.Balance(ctx, identity(ctx), ledger.RelationFeatureUnit)
	if err != nil {
		return nil, h.status(ctx, err)
	}
	b, err := h.budgetAll(ctx, bal)
	if err != nil {
		return nil, h.status(ctx, err)
	}
	return &curatorv1.GetBudgetResponse{Budget: b}, nil
}

// budgetAll is the Budget of featureUnit's identity with its relations filled: one
// RelationBudget per relation of ledger.Relations, featureUnit for its own. The
// balances are read one after another, not in one transaction, so a charge made
// meanwhile may show in some relations and not yet in others; each is consistent in
// itself. Only GetBudget and GetDatasetInfo fill the relations: the Budget of a query or
// projection response keeps the feature-unit fields only, so as not to read the ledger
// four times more per release (the proto's Budget documents this).
func (h *handlers) budgetAll(ctx context.Context, featureUnit ledger.Balance) (*curatorv1.Budget, error) {
	b := budgetProto(featureUnit)
	wp, err := h.wholePatient(ctx, featureUnit.Identity)
	if err != nil {
		return nil, err
	}
	b.WholePatient = wp
	b.Relations = make([]*curatorv1.RelationBudget, 0, len(ledger.Relations))
	for _, rel := range ledger.Relations {
		bal := featureUnit
		if rel != featureUnit.Relation {
			var err error
			if bal, err = h.cur.Balance(ctx, featureUnit.Identity, rel); err != nil {
				return nil, err
			}
		}
		b.Relations = append(b.Relations, relationBudgetProto(bal))
	}
	return b, nil
}

// relationBudgetProto is the RelationBudget of one relation's balance. Remaining is what
// a charge can still spend: the smaller of the identity's and the dataset's remainders,
// since a charge must fit both.
func relationBudgetProto(b ledger.Balance) *curatorv1.RelationBudget {
	return &curatorv1.RelationBudget{
		Relation:     string(b.Relation),
		EpsilonLimit: b.Limits.PerIdentity.Epsilon, DeltaLimit: b.Limits.PerIdentity.Delta,
		EpsilonSpent: b.Spent.Epsilon, DeltaSpent: b.Spent.Delta,
		EpsilonRemaining:    b.Available().Epsilon,
		DeltaRemaining:      b.Available().Delta,
		DatasetEpsilonLimit: b.Limits.Dataset.Epsilon, DatasetDeltaLimit: b.Limits.Dataset.Delta,
		DatasetEpsilonSpent: b.DatasetSpent.Epsilon, DatasetDeltaSpent: b.DatasetSpent.Delta,
		DatasetEpsilonRemaining: b.DatasetRemaining.Epsilon, DatasetDeltaRemaining: b.DatasetRemaining.Delta,
		EpsilonReserved: b.Reserved.Epsilon, DeltaReserved: b.Reserved.Delta,
		DatasetEpsilonReserved: b.DatasetReserved.Epsilon, DatasetDeltaReserved: b.DatasetReserved.Delta,
	}
}

func (h *handlers) ReleaseProjection(req *curatorv1.ReleaseProjectionRequest, stream curatorv1.CuratorService_ReleaseProjectionServer) error {
	ctx := stream.Context()
	if req.GetDimension() > math.MaxInt32 {
		return status.Errorf(codes.InvalidArgument, "projection dimension %d is too large", req.GetDimension())
	}
	preq := curator.ProjectionRequest{R: int(req.GetDimension()), Epsilon: req.GetEpsilon(), Delta: req.GetDelta(), Label: req.GetLabel(),
		WithAnswers: req.GetWithAnswers()}
	// Refused before the ledger or the data is touched when it can never be served.
	if err := h.cur.CheckProjection(preq); err != nil {
		return h.status(ctx, err)
	}
	id := identity(ctx)
	closed, err := h.openStream(id)
	if err != nil {
		return err
	}
	defer closed()
	p, err := h.cur.ReleaseProjection(ctx, id, preq)
	if err != nil {
		return h.status(ctx, err)
	}
	f, err := p.Open(ctx)
	if err != nil {
		return h.status(ctx, err)
	}
	return h.pump(ctx, p, f, func(progress func()) error { return h.send(ctx, stream, p, f, progress) })
}

// openStream counts a release stream of identity id, refused beyond Streams.PerIdentity
// (before anything is computed or charged), and returns the function that closes it.
func (h *handlers) openStream(id string) (closed func(), err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if n := h.open[id]; n >= h.streams.PerIdentity {
		return nil, withRetry(status.New(codes.ResourceExhausted, fmt.Sprintf(
			"identity %q already has %d release streams open, the most it may have at once; retry when one ends", id, n)), time.Second)
	}
	h.open[id]++
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.open[id]--; h.open[id] == 0 {
			delete(h.open, id)
		}
	}, nil
}

// pump runs send, which streams p from f and calls progress after each message, in a
// goroutine, and cuts the stream when its client reads nothing for Streams.IdleTimeout:
// the handler returns, gRPC cancels the stream, the blocked send returns and f is
// closed, giving back the stream's memory. f is closed before pump returns otherwise.
func (h *handlers) pump(ctx context.Context, p *curator.Projection, f io.Closer, send func(progress func()) error) error {
	moved := make(chan struct{}, 1)
	done := make(chan error, 1)
	var cut atomic.Bool
	go func() {
		err := send(func() {
			select {
			case moved <- struct{}{}:
			default:
			}
		})
		f.Close()
		if err != nil && cut.Load() {
			h.log.Info("release stream cut: its client read nothing for the idle timeout; its memory is given back",
				zap.String("release", p.ID), zap.String("identity", identity(ctx)), zap.Duration("idle_timeout", h.streams.IdleTimeout),
				zap.String("request_id", transport.RequestIDFromContext(ctx)))
		}
		done <- err
	}()
	idle := time.NewTimer(h.streams.IdleTimeout)
	defer idle.Stop()
	for {
		select {
		case err := <-done:
			return err
		case <-moved:
			idle.Reset(h.streams.IdleTimeout)
		case <-idle.C:
			cut.Store(true)
			return status.Errorf(codes.DeadlineExceeded, "the curator cut this stream: its client read nothing for %s; asking again replays release %s at no cost",
				h.streams.IdleTimeout, p.ID)
		}
	}
}

// send streams p from f: the header, the matrix in chunks, the trailer with its
// SHA-256, checked against the recorded one. It calls progress after each message.
func (h *handlers) send(ctx context.Context, stream curatorv1.CuratorService_ReleaseProjectionServer, p *curator.Projection, f io.Reader, progress func()) error {
	if err := stream.Send(&curatorv1.ReleaseProjectionResponse{Part: &curatorv1.ReleaseProjectionResponse_Header{Header: &curatorv1.ProjectionHeader{
		ReleaseId: p.ID, Rows: uint64(p.Rows), Cols: uint32(p.Cols), Replayed: p.Replayed,
		Budget: budgetProto(p.Budget), Guarantee: p.Guarantee, NoiseSd: p.NoiseSD,
		WholePatient: &curatorv1.WholePatientCost{Bounded: !p.WholePatient.Unbounded, Epsilon: p.WholePatient.Epsilon, Delta: p.WholePatient.Delta},
	}}}); err != nil {
		return err
	}
	progress()
	rowsPer := matrixio.RowsPerChunk(p.Cols)
	buf := make([]byte, rowsPer*p.Cols*8)
	sum := sha256.New()
	for first := 0; first < p.Rows; first += rowsPer {
		rows := min(rowsPer, p.Rows-first)
		data := buf[:rows*p.Cols*8]
		if _, err := io.ReadFull(f, data); err != nil {
			return h.status(ctx, fmt.Errorf("server: reading stored release %s: %w", p.ID, err))
		}
		sum.Write(data)
		// Send serialises the message before returning, so buf can be reused.
		if err := stream.Send(&curatorv1.ReleaseProjectionResponse{Part: &curatorv1.ReleaseProjectionResponse_Chunk{Chunk: &curatorv1.MatrixChunk{
			FirstRow: uint64(first), RowCount: uint32(rows), Data: data,
		}}}); err != nil {
			return err
		}
		progress()
	}
	got := sum.Sum(nil)
	if string(got) != string(p.SHA256) {
		h.log.Error("stored release does not match its recorded checksum", zap.String("release", p.ID))
		return status.Errorf(codes.DataLoss, "the stored release %s is damaged; ask the curator's operator", p.ID)
	}
	return stream.Send(&curatorv1.ReleaseProjectionResponse{Part: &curatorv1.ReleaseProjectionResponse_Trailer{Trailer: &curatorv1.ProjectionTrailer{Sha256: got}}})
}

func (h *handlers) Query(ctx context.Context, req *curatorv1.QueryRequest) (*curatorv1.QueryResponse, error) {
	idx := make([]int, len(req.GetIndices()))
	for k, i := range req.GetIndices() {
		if i > math.MaxInt32 {
			return nil, status.Errorf(codes.InvalidArgument, "index %d is out of range", i)
		}
		idx[k] = int(i)
	}
	var clip curator.Clip
	if c := req.GetClip(); c != nil {
		clip = curator.Clip{Lower: c.GetLower(), Upper: c.GetUpper()}
		if clip.IsZero() {
			return nil, status.Error(codes.InvalidArgument, "clip range [0, 0]: want lower < upper inside the public output range, or no clip for the public range")
		}
	}
	if req.GetConfirmationPass() > curator.MaxPass {
		return nil, status.Errorf(codes.InvalidArgument, "answering pass %d: want 0, or 1 to %d", req.GetConfirmationPass(), curator.MaxPass)
	}
	obs, bal, err := h.cur.QueryWith(ctx, identity(ctx), idx, curator.QueryOptions{Clip: clip, Pass: int(req.GetConfirmationPass())})
	if err != nil {
		return nil, h.status(ctx, err)
	}
	resp := &curatorv1.QueryResponse{Observations: make([]*curatorv1.Observation, len(obs)), Budget: budgetProto(bal)}
	for k, o := range obs {
		resp.Observations[k] = &curatorv1.Observation{Index: uint64(o.Index), Value: o.Value, Replayed: o.Replayed}
		if !o.Clip.IsZero() {
			resp.Observations[k].Clip = &curatorv1.ClipRange{Lower: o.Clip.Lower, Upper: o.Clip.Upper}
		}
	}
	return resp, nil
}

// QuoteStudy states a study's cost before anything is charged (curator.Quote).
func (h *handlers) QuoteStudy(ctx context.Context, req *curatorv1.QuoteStudyRequest) (*curatorv1.QuoteStudyResponse, error) {
	if req.GetDimension() > math.MaxInt32 {
		return nil, status.Errorf(codes.InvalidArgument, "projection dimension %d is too large", req.GetDimension())
	}
	q, err := h.cur.Quote(ctx, identity(ctx), curator.QuoteRequest{
		R: int(req.GetDimension()), Epsilon: req.GetEpsilon(), Delta: req.GetDelta(), Label: req.GetLabel(), WithAnswers: req.GetWithAnswers(),
	})
	if err != nil {
		return nil, h.status(ctx, err)
	}
	capy, err := h.cur.StudyCapacity(ctx)
	if err != nil {
		return nil, h.status(ctx, err)
	}
	return quoteProto(q, capy), nil
}

// quoteProto is the QuoteStudyResponse of a quote and the default study's capacity.
func quoteProto(q *curator.Quote, s curator.StudyCapacity) *curatorv1.QuoteStudyResponse {
	a := q.Answers
	resp := &curatorv1.QuoteStudyResponse{
		Projection: &curatorv1.ProjectionQuote{
			Dimension: uint32(q.R), DimensionChosen: q.RChosen, Epsilon: q.Epsilon, Delta: q.Delta,
			DefaultEpsilon: q.DefaultEpsilon, DefaultDelta: q.DefaultDelta, Label: q.Label,
			Mechanism: q.Mechanism, Relation: string(q.Relation), NoiseSd: q.NoiseSD,
			WholePatientEpsilon: q.WholePatientEpsilon, WholePatientUnits: q.WholePatientUnits, WholePatient: q.WholePatient,
			Paid: q.ProjectionPaid, DimensionChoice: dimensionChoiceProto(q.DimensionChoice),
		},
		Answers: &curatorv1.AnswersQuote{Included: a.Included, Mechanism: a.Mechanism, Relation: string(a.Relation),
			Epsilon: a.Epsilon, Delta: a.Delta, Lower: a.Lower, Upper: a.Upper, NoiseSd: a.NoiseSD, Paid: a.Paid, Noise: noiseFamilyProto(a.Noise)},
		Fits: q.Fits, Refusal: q.Refusal,
		WholePatient: &curatorv1.WholePatientCharge{Bounded: !q.Patient.Charge.Unbounded, Epsilon: q.Patient.Charge.Epsilon, Delta: q.Patient.Charge.Delta,
			EpsilonLimit: q.Patient.Limits.PerIdentity.Epsilon, DeltaLimit: q.Patient.Limits.PerIdentity.Delta,
			DatasetEpsilonLimit: q.Patient.Limits.Dataset.Epsilon, DatasetDeltaLimit: q.Patient.Limits.Dataset.Delta,
			EpsilonAvailable: q.Patient.Available.Epsilon, DeltaAvailable: q.Patient.Available.Delta, Fits: q.Patient.Fits},
		DefaultStudy: &curatorv1.DefaultStudy{
			ProjectionEpsilon: s.Projection.Epsilon, ProjectionDelta: s.Projection.Delta,
			AnswersEpsilon: s.Answers.Epsilon, AnswersDelta: s.Answers.Delta,
			PerIdentity: uint32(s.PerIdentity), Dataset: uint32(s.Dataset), DatasetLeft: uint32(s.DatasetLeft),
		},
	}
	for _, c := range q.Costs {
		resp.Charges = append(resp.Charges, &curatorv1.RelationCharge{Relation: string(c.Relation),
			Epsilon: c.Charge.Epsilon, Delta: c.Charge.Delta,
			EpsilonAvailable: c.Available.Epsilon, DeltaAvailable: c.Available.Delta, Fits: c.Fits, Scope: c.Scope})
	}
	return resp
}

// noiseFamilyProto states an answer mechanism's noise family on the wire: the proto's
// value of the same name (UNSPECIFIED for noise.Unstated).
func noiseFamilyProto(f noise.Family) curatorv1.NoiseFamily {
	return curatorv1.NoiseFamily(curatorv1.NoiseFamily_value["NOISE_FAMILY_"+strings.ToUpper(f.String())])
}

// dimensionChoiceProto is how the curator chose a dimension (nil when it did not).
func dimensionChoiceProto(c *projection.AutoChoice) *curatorv1.DimensionChoice {
	if c == nil {
		return nil
	}
	return &curatorv1.DimensionChoice{Rule: c.Rule, NoiseSd: c.NoiseSD, NoiseShare: c.NoiseShare,
		Distortion: c.Distortion, TypicalSquaredDistance: c.TypicalSquaredDistance}
}

// budgetProto is the Budget of a feature-unit balance, without its relations.
func budgetProto(b ledger.Balance) *curatorv1.Budget {
	return &curatorv1.Budget{
		Identity:     b.Account.Identity,
		EpsilonLimit: b.Limits.PerIdentity.Epsilon, DeltaLimit: b.Limits.PerIdentity.Delta,
		EpsilonSpent: b.Spent.Epsilon, DeltaSpent: b.Spent.Delta,
		EpsilonRemaining: b.Available().Epsilon,
		DeltaRemaining:   b.Available().Delta,
		EpsilonReserved:  b.Reserved.Epsilon,
		DeltaReserved:    b.Reserved.Delta,
	}
}

// wholePatientProto is the WholePatientBudget of a whole-patient balance.
func wholePatientProto(b ledger.PatientBalance) *curatorv1.WholePatientBudget {
	id, ds := b.IdentityTotal.Cost(), b.DatasetTotal.Cost()
	w := &curatorv1.WholePatientBudget{
		Bounded: b.IdentityTotal.Bounded(), DatasetBounded: b.DatasetTotal.Bounded(),
		EpsilonLimit: b.Limits.PerIdentity.Epsilon, DeltaLimit: b.Limits.PerIdentity.Delta,
		DatasetEpsilonLimit: b.Limits.Dataset.Epsilon, DatasetDeltaLimit: b.Limits.Dataset.Delta,
		Statement: ledger.PatientStatement(fmt.Sprintf("identity %s on dataset %s: every release to it, plus the dataset's estimate if the curator made one, counted in the dataset's total", b.Account.Identity, b.Account.Dataset), b.IdentityTotal, b.Limits.PerIdentity),
	}
	if w.Bounded {
		w.EpsilonSpent, w.DeltaSpent = id.Epsilon, id.Delta
	} else {
		w.EpsilonSpent, w.DeltaSpent = finiteSum(b.IdentityTotal)
	}
	if w.DatasetBounded {
		w.DatasetEpsilonSpent, w.DatasetDeltaSpent = ds.Epsilon, ds.Delta
	} else {
		w.DatasetEpsilonSpent, w.DatasetDeltaSpent = finiteSum(b.DatasetTotal)
	}
	w.EpsilonReserved, w.DeltaReserved = finiteSum(b.IdentityReserved)
	w.DatasetEpsilonReserved, w.DatasetDeltaReserved = finiteSum(b.DatasetReserved)
	rem := ledger.Cost{Epsilon: math.Inf(1), Delta: math.Inf(1)}
	capped := false
	for _, c := range []struct{ cap, left ledger.Cost }{{b.Limits.PerIdentity, b.Remaining}, {b.Limits.Dataset, b.DatasetRemaining}} {
		if c.cap.Epsilon > 0 {
			capped = true
			rem.Epsilon, rem.Delta = math.Min(rem.Epsilon, c.left.Epsilon), math.Min(rem.Delta, c.left.Delta)
		}
	}
	if capped {
		w.EpsilonRemaining, w.DeltaRemaining = rem.Epsilon, rem.Delta
	}
	return w
}

// finiteSum is the sum of a total's finite figures (its Epsilon and Delta); 0 for
// the zero PatientTotal.
func finiteSum(t ledger.PatientTotal) (float64, float64) {
	if t.Epsilon == nil || t.Delta == nil {
		return 0, 0
	}
	e, _ := t.Epsilon.Float64()
	d, _ := t.Delta.Float64()
	return e, d
}

// wholePatient returns the caller's whole-patient balance.
func (h *handlers) wholePatient(ctx context.Context, identity string) (*curatorv1.WholePatientBudget, error) {
	b, err := h.cur.PatientBalance(ctx, identity)
	if err != nil {
		return nil, err
	}
	return wholePatientProto(b), nil
}

// status maps a domain error to a gRPC status with a message a person can act on.
// Unexpected errors are logged in full for the operator and answered as Internal.
func (h *handlers) status(ctx context.Context, err error) error {
	var be *ledger.BudgetError
	var rl *curator.ExactRowLimitError
	var me *curator.MemoryError
	var we *memory.WaitError
	var se *ledger.StoredBytesError
	switch {
	case errors.As(err, &se):
		return withReason(codes.ResourceExhausted, se.Error(), refusal.StoredBytes, map[string]string{refusal.KeyScope: se.Scope,
			refusal.KeyRequestedBytes: fmt.Sprint(se.Requested), refusal.KeyStoredBytes: fmt.Sprint(se.Stored),
			refusal.KeyReservedBytes: fmt.Sprint(se.Reserved), refusal.KeyQuotaBytes: fmt.Sprint(se.Quota)})
	case errors.As(err, &we) && !errors.Is(err, context.Canceled):
		// Before the context's errors: the wait gave up before the client's deadline, so
		// that the client learns why.
		st := status.New(codes.ResourceExhausted, fmt.Sprintf("the curator's memory for releases stayed taken by releases in progress until shortly before this request's deadline "+
			"(it needs %s; %s of %s were held); retry shortly, or with a longer deadline", memory.MiB(we.Need), memory.MiB(we.Held), memory.MiB(we.Capacity)))
		return withRetry(withInfo(st, refusal.MemoryLimit, map[string]string{refusal.KeyNeededBytes: fmt.Sprint(we.Need),
			refusal.KeyAvailableBytes: fmt.Sprint(we.Capacity), refusal.KeyHeldBytes: fmt.Sprint(we.Held)}), time.Second)
	case errors.As(err, &me):
		return withReason(codes.ResourceExhausted, me.Error(), refusal.MemoryLimit, map[string]string{
			refusal.KeyNeededBytes: fmt.Sprint(me.Need), refusal.KeyAvailableBytes: fmt.Sprint(me.Limit),
			refusal.KeyDimension: fmt.Sprint(me.R), refusal.KeyMaxDimension: fmt.Sprint(me.MaxR)})
	case errors.As(err, &be):
		if be.Limit == (ledger.Cost{}) {
			e := *be
			e.Limit = h.limits.PerIdentity
			if e.Scope == ledger.ScopeDataset {
				e.Limit = h.limits.Dataset
			}
			be = &e
		}
		meta := map[string]string{refusal.KeyScope: be.Scope, refusal.KeyRelation: string(be.Relation),
			refusal.KeyRequestedEpsilon: fmt.Sprint(be.Requested.Epsilon), refusal.KeyRequestedDelta: fmt.Sprint(be.Requested.Delta),
			refusal.KeyRemainingEpsilon: fmt.Sprint(be.Remaining.Epsilon), refusal.KeyRemainingDelta: fmt.Sprint(be.Remaining.Delta)}
		if be.WholePatient {
			// The whole-patient cap refused: its figures are whole-patient ones.
			meta[refusal.KeyBudget] = refusal.WholePatient
		}
		if !be.Reserved.IsZero() {
			// Held by releases being computed: back if they fail.
			meta["reserved_epsilon"], meta["reserved_delta"] = fmt.Sprint(be.Reserved.Epsilon), fmt.Sprint(be.Reserved.Delta)
		}
		if be.ZeroDeltaLimit() {
			// Not a spent budget: nothing needing δ can ever be released.
			return withReason(codes.FailedPrecondition, be.Error(), refusal.DeltaBudgetZero, meta)
		}
		return withReason(codes.ResourceExhausted, be.Error(), refusal.BudgetExceeded, meta)
	case errors.Is(err, curator.ErrNoDeltaBudget):
		return withReason(codes.FailedPrecondition, err.Error(), refusal.DeltaBudgetZero, nil)
	case errors.Is(err, curator.ErrDimensionAboveFeatures):
		return withReason(codes.InvalidArgument, err.Error(), refusal.DimensionAboveFeatures, nil)
	case errors.Is(err, curator.ErrInvalidArgument):
		return status.Error(codes.InvalidArgument, err.Error())
	case errors.Is(err, curator.ErrNeedProjection):
		return status.Error(codes.FailedPrecondition, err.Error())
	case errors.As(err, &rl):
		return withReason(codes.ResourceExhausted, err.Error(), refusal.ExactRowLimit, map[string]string{
			refusal.KeyLimit: fmt.Sprint(rl.Limit), refusal.KeyAnswered: fmt.Sprint(rl.Answered), refusal.KeyRequested: fmt.Sprint(rl.Requested)})
	case errors.Is(err, curator.ErrEvaluation):
		return status.Error(codes.Aborted, err.Error()+"; asking again evaluates the row again")
	case errors.Is(err, ledger.ErrUnavailable) && ctx.Err() == nil:
		// Before the context's errors: a bound of the ledger's own (its call timeout)
		// is not the caller's deadline.
		h.log.Warn("privacy ledger unavailable", zap.String("request_id", transport.RequestIDFromContext(ctx)), zap.Error(err))
		return withReason(codes.Unavailable, "the curator cannot reach its privacy ledger right now (its database did not answer, or dropped the connection); "+
			"retry the same request shortly: a release already charged is replayed at no cost", refusal.LedgerUnavailable, nil)
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, "request cancelled")
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, "request deadline exceeded")
	case errors.Is(err, ledger.ErrReserved):
		return withReason(codes.Aborted, "the same release is being computed for another request right now; retry shortly and it is replayed at no cost",
			refusal.ReleaseInProgress, nil)
	case errors.Is(err, ledger.ErrUnavailable):
		return status.Error(codes.Unavailable, "the curator cannot reach its privacy ledger right now; retry the same request shortly")
	}
	h.log.Error("request failed", zap.String("request_id", transport.RequestIDFromContext(ctx)), zap.Error(err))
	return status.Errorf(codes.Internal, "internal error (request id %s); the curator's operator can find details in its log", transport.RequestIDFromContext(ctx))
}

// withReason is the status (code, msg) with an ErrorInfo of reason and meta.
func withReason(code codes.Code, msg string, reason refusal.Reason, meta map[string]string) error {
	return withInfo(status.New(code, msg), reason, meta).Err()
}

// withInfo is st with an ErrorInfo of reason and meta.
func withInfo(st *status.Status, reason refusal.Reason, meta map[string]string) *status.Status {
	if d, err := st.WithDetails(&errdetails.ErrorInfo{Reason: string(reason), Domain: refusal.Domain, Metadata: meta}); err == nil {
		st = d
	}
	return st
}

// withRetry is st with a RetryInfo asking the client to retry after delay: waiting
// may change the answer (the clients retry such a RESOURCE_EXHAUSTED as asked).
func withRetry(st *status.Status, delay time.Duration) error {
	if d, err := st.WithDetails(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)}); err == nil {
		st = d
	}
	return st.Err()
}
