package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/privbo/privbo/pkg/curator"
	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/ledger"
	"github.com/privbo/privbo/pkg/projection"
	"github.com/privbo/privbo/pkg/transport"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// The privacy path table of docs/PRIVACY.md §6b, pinned through the gRPC handlers: for
// the projection, the answers and a study, a charge the ledger cannot make sends
// nothing; the guarantee text the client receives is the one built here from the
// request's parameters; the charge names its relation and whole-patient figure; a
// replay charges nothing; an over-budget request sends nothing. The private scaling
// estimate's row is pinned in scaling_test.go (TestEstimatedRangeStatedAsUsed,
// TestPrivateScalingChargedOnceAndReused, TestScalingChargeFails), the jobs' in
// pkg/jobs (TestSubmitReserves, TestJobStatesItsPlan).

// gatedLedger fails every charge (Charge, ChargeAll, Commit) with fail while it is
// set, recording nothing.
type gatedLedger struct {
	*ledger.Ledger
	mu   sync.Mutex
	fail error
}

func (g *gatedLedger) set(err error) {
	g.mu.Lock()
	g.fail = err
	g.mu.Unlock()
}

func (g *gatedLedger) err() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fail
}

func (g *gatedLedger) Charge(ctx context.Context, c ledger.Charge) (ledger.Receipt, error) {
	if err := g.err(); err != nil {
		return ledger.Receipt{}, err
	}
	return g.Ledger.Charge(ctx, c)
}

func (g *gatedLedger) ChargeAll(ctx context.Context, cs []ledger.Charge) ([]ledger.Receipt, error) {
	if err := g.err(); err != nil {
		return nil, err
	}
	return g.Ledger.ChargeAll(ctx, cs)
}

func (g *gatedLedger) Commit(ctx context.Context, r *ledger.Reservation, cs []ledger.Charge) ([]ledger.Receipt, error) {
	if err := g.err(); err != nil {
		return nil, err
	}
	return g.Ledger.Commit(ctx, r, cs)
}

// sentStream records what ReleaseProjection sends.
type sentStream struct {
	curatorv1.CuratorService_ReleaseProjectionServer
	ctx  context.Context
	sent []*curatorv1.ReleaseProjectionResponse
}

func (s *sentStream) Context() context.Context { return s.ctx }
func (s *sentStream) Send(m *curatorv1.ReleaseProjectionResponse) error {
	s.sent = append(s.sent, m)
	return nil
}
func (*sentStream) SetHeader(metadata.MD) error { return nil }

// The path curator: 20 rows of two features scaled with "none" (clip norm 25, unit 1:
// a whole patient is 50 units), Laplace answers at ε = 0.5 on [0, 4], seeded projection
// matrices (so that a release's sensitivity is fixed), limits ε 3, δ 1e-3.
const (
	pathRows             = 20
	pathAnswerEps        = 0.5
	pathLower, pathUpper = 0.0, 4.0
)

type pathCurator struct {
	h     *handlers
	gate  *gatedLedger
	store *ledger.Ledger
}

func newPathCurator(t *testing.T) *pathCurator {
	t.Helper()
	var b strings.Builder
	b.WriteString("a,b,y\n")
	for i := range pathRows {
		fmt.Fprintf(&b, "%d,%d,%d\n", i, (i*7)%11, i%5)
	}
	raw, err := dataset.ParseRaw(strings.NewReader(b.String()), "paths", dataset.Options{Target: "y"})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := raw.Scale(dataset.Scaling{Mode: dataset.ScaleNone})
	if err != nil {
		t.Fatal(err)
	}
	ds.Unit = "UNIT."
	dir := t.TempDir()
	limits := ledger.Limits{PerIdentity: ledger.Cost{Epsilon: 3, Delta: 1e-3}, Dataset: ledger.Cost{Epsilon: 30, Delta: 1e-2}}
	store, err := ledger.OpenSQLite(filepath.Join(dir, "ledger.db"), limits)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	gate := &gatedLedger{Ledger: store}
	cur, err := curator.New(curator.Config{Dataset: ds, DatasetID: "paths", Ledger: gate, StateDir: dir,
		Output:                     curator.OutputPrivacy{Mechanism: "laplace", Epsilon: pathAnswerEps, Lower: pathLower, Upper: pathUpper},
		SimulationProjectionSource: func() projection.Source { return projection.SeededSource(7) }})
	if err != nil {
		t.Fatal(err)
	}
	return &pathCurator{h: New(cur, nil, limits, Streams{}, zap.NewNop()).(*handlers), gate: gate, store: store}
}

// charges returns identity's ledger records.
func (p *pathCurator) charges(t *testing.T, identity string) []ledger.Receipt {
	t.Helper()
	all, err := p.store.Entries(context.Background(), "paths")
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Receipt
	for _, e := range all {
		if e.Identity == identity {
			out = append(out, e)
		}
	}
	return out
}

func (p *pathCurator) spent(t *testing.T, identity string) ledger.Cost {
	t.Helper()
	b, err := p.store.Balance(context.Background(), ledger.Account{Dataset: "paths", Identity: identity}, ledger.RelationFeatureUnit)
	if err != nil {
		t.Fatal(err)
	}
	return b.Spent
}

func (p *pathCurator) release(identity string, req *curatorv1.ReleaseProjectionRequest) (*sentStream, error) {
	s := &sentStream{ctx: transport.WithIdentity(context.Background(), identity)}
	return s, p.h.ReleaseProjection(req, s)
}

// projectionText is the guarantee a projection of (eps, delta), r = 2, on the path
// curator states, built from its parameters: the Gaussian mechanism's head under the
// feature-unit relation, the unit, and the whole-patient sentence of the discrete vector
// Gaussian of its n·r values at sensitivity sens (recorded with the release), at 1, 2, 5
// and 10 units and at the clip diameter 2·25/1 = 50 units, rounded up. It returns the
// whole-patient ε as a number too.
func projectionText(t *testing.T, eps, delta, sens float64) (string, float64) {
	t.Helper()
	g, err := dp.NewVectorGaussian(eps, delta, sens, pathRows*2)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := dp.WholeRecordTable(g, delta, []float64{1, 2, 5, 10, 50})
	if err != nil {
		t.Fatal(err)
	}
	whole := rows[len(rows)-1].Epsilon
	return fmt.Sprintf("(ε=%g, δ=%g)-DP under the feature-unit neighbour relation (one record's feature vector changes by at most one protected unit): "+
		"mechanism gaussian, the JL projection plus Gaussian noise calibrated to its sensitivity (Kenthapadi et al. 2013). One protected unit: UNIT. "+
		"Whole patient: replacing one patient's record by any other moves its scaled row by at most 50 units (the clip diameter), "+
		"so this release is (ε=%s, δ=%g)-DP under the record neighbour relation (the Gaussian mechanism's guarantee at that distance, Canonne, Kamath & Steinke 2020, Theorem 14); "+
		"at δ=%g by public distance, %s.", eps, delta, dp.RoundUpEpsilon(whole), delta, delta, dp.FormatWholeRecordTable(rows, 50)), whole
}

// answersText is the answers' guarantee of the path curator, built from ε, the range
// and its width.
func answersText() string {
	rng := fmt.Sprintf("[%g, %g]", pathLower, pathUpper)
	return fmt.Sprintf("each answer (ε=%g, δ=0)-DP under the record neighbour relation (one record replaced by any other): mechanism laplace, "+
		"the recorded value clipped to %s plus Laplace noise calibrated to the sensitivity %g; "+
		"answers to one identity compose in parallel (each record influences one answer; a repeated row replays its answer), "+
		"so an identity is charged (ε, δ) once for all its answers; each identity gets fresh noise and pays once; "+
		"a query may ask for a clip range inside the public one, whose fresh answers carry noise calibrated to its width at the same (ε, δ) and cost nothing more; "+
		"a confirmation pass (rows answered again with fresh noise, each at most once in the pass) is a new release, charged (ε, δ) again; "+
		"whole patient: the same (ε=%g, δ=0), the relation being record-level already (every answer lies in %s whatever the patient, "+
		"so replacing a whole patient moves it by at most the sensitivity)", pathAnswerEps, rng, pathUpper-pathLower, pathAnswerEps, rng)
}

// recordedSensitivity reads the sensitivity a projection release recorded.
func (p *pathCurator) recordedSensitivity(t *testing.T, identity, id string) float64 {
	t.Helper()
	rec, ok, err := p.store.Get(context.Background(), ledger.Account{Dataset: "paths", Identity: identity}, "projection/"+id)
	if err != nil || !ok {
		t.Fatalf("the ledger record of %s: %v, %v", id, ok, err)
	}
	var pr struct {
		Sensitivity float64 `json:"sensitivity"`
	}
	if err := json.Unmarshal(rec.Result, &pr); err != nil || !(pr.Sensitivity > 0) {
		t.Fatalf("recorded sensitivity %g (%v), want > 0", pr.Sensitivity, err)
	}
	return pr.Sensitivity
}

// TestPathProjection: row (a) of the path table.
func TestPathProjection(t *testing.T) {
	p := newPathCurator(t)
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5}

	// Charge before send: a commit the ledger fails sends nothing and spends nothing.
	p.gate.set(ledger.ErrUnavailable)
	s, err := p.release("alice", req)
	if status.Code(err) != codes.Unavailable || len(s.sent) != 0 || len(p.charges(t, "alice")) != 0 {
		t.Fatalf("release whose charge fails: %v, %d messages sent, %d charges; want UNAVAILABLE, nothing sent or charged", err, len(s.sent), len(p.charges(t, "alice")))
	}
	p.gate.set(nil)

	s, err = p.release("alice", req)
	if err != nil || len(s.sent) < 3 {
		t.Fatalf("release: %v, %d messages", err, len(s.sent))
	}
	hdr := s.sent[0].GetHeader()
	want, whole := projectionText(t, 1, 1e-5, p.recordedSensitivity(t, "alice", hdr.GetReleaseId()))
	if hdr.GetGuarantee() != want {
		t.Errorf("header guarantee\n got: %s\nwant: %s", hdr.GetGuarantee(), want)
	}
	if w := hdr.GetWholePatient(); !w.GetBounded() || w.GetEpsilon() != whole || w.GetDelta() != 1e-5 || hdr.GetReplayed() {
		t.Errorf("header whole patient %v, replayed %v; want bounded ε %g at δ 1e-05, a new release", w, hdr.GetReplayed(), whole)
	}
	cs := p.charges(t, "alice")
	if len(cs) != 1 || cs[0].Kind != ledger.KindProjection || cs[0].Relation != ledger.RelationFeatureUnit ||
		cs[0].Cost != (ledger.Cost{Epsilon: 1, Delta: 1e-5}) || cs[0].Patient.Epsilon != whole || cs[0].Patient.Delta != 1e-5 || cs[0].Patient.Unbounded {
		t.Fatalf("charges %+v; want one projection under feature-unit at (1, 1e-05), whole patient (%g, 1e-05)", cs, whole)
	}

	// A replay sends the same release and text, and charges nothing.
	s, err = p.release("alice", req)
	if err != nil || !s.sent[0].GetHeader().GetReplayed() || s.sent[0].GetHeader().GetGuarantee() != want || len(p.charges(t, "alice")) != 1 ||
		p.spent(t, "alice") != (ledger.Cost{Epsilon: 1, Delta: 1e-5}) {
		t.Errorf("replay: %v, header %v, %d charges, spent %+v; want the same text, no charge", err, s.sent[0].GetHeader(), len(p.charges(t, "alice")), p.spent(t, "alice"))
	}
	// Another label is a new release: it composes.
	if _, err := p.release("alice", &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5, Label: "second"}); err != nil ||
		p.spent(t, "alice") != (ledger.Cost{Epsilon: 2, Delta: 2e-5}) {
		t.Errorf("a second release: %v, spent %+v; want (2, 2e-05)", err, p.spent(t, "alice"))
	}
	// Over budget (ε 2 + 1.5 > 3): refused, nothing sent or charged.
	s, err = p.release("alice", &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1.5, Delta: 1e-5})
	if status.Code(err) != codes.ResourceExhausted || len(s.sent) != 0 || len(p.charges(t, "alice")) != 2 {
		t.Errorf("over budget: %v, %d messages, %d charges; want RESOURCE_EXHAUSTED, nothing sent, 2 charges", err, len(s.sent), len(p.charges(t, "alice")))
	}
}

// TestPathAnswers: row (b) of the path table — answers, a clip range and a
// confirmation pass.
func TestPathAnswers(t *testing.T) {
	p := newPathCurator(t)
	ctx := transport.WithIdentity(context.Background(), "alice")
	query := func(req *curatorv1.QueryRequest) (*curatorv1.QueryResponse, error) { return p.h.Query(ctx, req) }
	answers := ledger.Cost{Epsilon: pathAnswerEps}

	// The text the client receives for every answer.
	info, err := p.h.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if op := info.GetOutputPrivacy(); op.GetGuarantee() != answersText() || op.GetRelation() != string(ledger.RelationRecord) ||
		!strings.HasSuffix(info.GetGuarantee(), " Query answers: "+answersText()+".") {
		t.Errorf("answers' guarantee\n got: %s (relation %s)\nwant: %s (relation record)", op.GetGuarantee(), op.GetRelation(), answersText())
	}

	// Charge before send: the answers' charge fails, nothing is answered or recorded.
	p.gate.set(ledger.ErrUnavailable)
	if resp, err := query(&curatorv1.QueryRequest{Indices: []uint64{1, 2}}); status.Code(err) != codes.Unavailable || resp != nil || len(p.charges(t, "alice")) != 0 {
		t.Fatalf("query whose charge fails: %v, %v, %d records; want UNAVAILABLE, no answer, nothing recorded", err, resp, len(p.charges(t, "alice")))
	}
	p.gate.set(nil)

	first, err := query(&curatorv1.QueryRequest{Indices: []uint64{1, 2}})
	if err != nil || len(first.GetObservations()) != 2 {
		t.Fatalf("query: %v, %v", err, first)
	}
	for _, o := range first.GetObservations() {
		if o.GetReplayed() || o.GetClip().GetLower() != pathLower || o.GetClip().GetUpper() != pathUpper {
			t.Errorf("observation %v: want a fresh answer clipped to the public range [%g, %g]", o, pathLower, pathUpper)
		}
	}
	paid := func() []ledger.Receipt {
		var out []ledger.Receipt
		for _, c := range p.charges(t, "alice") {
			if !c.Cost.IsZero() {
				out = append(out, c)
			}
		}
		return out
	}
	cs := paid()
	if len(cs) != 1 || cs[0].Kind != ledger.KindQueryAnswers || cs[0].Relation != ledger.RelationRecord || cs[0].Cost != answers ||
		cs[0].Patient != (ledger.PatientCost{Epsilon: pathAnswerEps}) {
		t.Fatalf("paid charges %+v; want one query-answers charge under record at ε %g, whole patient the same", cs, pathAnswerEps)
	}
	// A repeated row replays its answer; new rows and a clip range cost nothing more.
	again, err := query(&curatorv1.QueryRequest{Indices: []uint64{1, 2}})
	if err != nil || !again.GetObservations()[0].GetReplayed() || again.GetObservations()[0].GetValue() != first.GetObservations()[0].GetValue() {
		t.Errorf("replay: %v, %v; want the stored answers", err, again)
	}
	clipped, err := query(&curatorv1.QueryRequest{Indices: []uint64{3}, Clip: &curatorv1.ClipRange{Lower: 1, Upper: 2}})
	if err != nil || clipped.GetObservations()[0].GetClip().GetLower() != 1 || clipped.GetObservations()[0].GetClip().GetUpper() != 2 {
		t.Errorf("clipped query: %v, %v; want an answer stating the clip range [1, 2]", err, clipped)
	}
	if got := p.spent(t, "alice"); got != answers || len(paid()) != 1 {
		t.Errorf("after a replay, a new row and a clip range: spent %+v in %d charges; want %+v in 1", got, len(paid()), answers)
	}

	// A confirmation pass is a new release of its own: charged before its answers, under
	// record, at the same (ε, δ).
	p.gate.set(ledger.ErrUnavailable)
	if resp, err := query(&curatorv1.QueryRequest{Indices: []uint64{1}, ConfirmationPass: 1}); err == nil || resp != nil {
		t.Errorf("confirmation pass whose charge fails: %v, %v; want no answer", err, resp)
	}
	p.gate.set(nil)
	conf, err := query(&curatorv1.QueryRequest{Indices: []uint64{1}, ConfirmationPass: 1})
	if err != nil || conf.GetObservations()[0].GetReplayed() {
		t.Fatalf("confirmation pass: %v, %v", err, conf)
	}
	cs = paid()
	if len(cs) != 2 || cs[1].Relation != ledger.RelationRecord || cs[1].Cost != answers || !strings.HasSuffix(cs[1].Key, "/pass=1") {
		t.Errorf("after a confirmation pass, paid charges %+v; want a second one under record at ε %g, key …/pass=1", cs, pathAnswerEps)
	}

	// Over budget: an identity with ε 2.7 of 3 spent cannot pay 0.5; nothing is answered.
	if _, err := p.store.Charge(context.Background(), ledger.Charge{Account: ledger.Account{Dataset: "paths", Identity: "carol"}, Key: "earlier",
		Kind: "test", Relation: ledger.RelationFeatureUnit, Cost: ledger.Cost{Epsilon: 2.7}}); err != nil {
		t.Fatal(err)
	}
	resp, err := p.h.Query(transport.WithIdentity(context.Background(), "carol"), &curatorv1.QueryRequest{Indices: []uint64{1}})
	if status.Code(err) != codes.ResourceExhausted || resp != nil || len(p.charges(t, "carol")) != 1 {
		t.Errorf("over budget: %v, %v, %d records; want RESOURCE_EXHAUSTED, no answer, nothing recorded", err, resp, len(p.charges(t, "carol")))
	}
}

// TestPathStudy: row (d) of the path table — a quote charges nothing and states the
// study's parts, relations and whole-patient sentence; the projection with its answers
// is charged in one transaction or not at all.
func TestPathStudy(t *testing.T) {
	p := newPathCurator(t)
	ctx := transport.WithIdentity(context.Background(), "alice")
	req := &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true}

	q, err := p.h.QuoteStudy(ctx, &curatorv1.QuoteStudyRequest{Dimension: 2, Epsilon: 1, Delta: 1e-5, WithAnswers: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.charges(t, "alice")) != 0 {
		t.Errorf("a quote charged %d records, want none", len(p.charges(t, "alice")))
	}
	if q.GetProjection().GetRelation() != string(ledger.RelationFeatureUnit) || q.GetAnswers().GetRelation() != string(ledger.RelationRecord) ||
		!q.GetAnswers().GetIncluded() || q.GetAnswers().GetEpsilon() != pathAnswerEps || !q.GetFits() {
		t.Errorf("quote %v: want the projection under feature-unit, the answers included under record at ε %g, fitting", q, pathAnswerEps)
	}
	// The study's cost per relation: feature-unit holds both parts (record counts
	// towards it), record the answers.
	wantCharges := map[string]ledger.Cost{string(ledger.RelationFeatureUnit): {Epsilon: 1 + pathAnswerEps, Delta: 1e-5}, string(ledger.RelationRecord): {Epsilon: pathAnswerEps}}
	for _, c := range q.GetCharges() {
		if w, ok := wantCharges[c.GetRelation()]; !ok || c.GetEpsilon() != w.Epsilon || c.GetDelta() != w.Delta {
			t.Errorf("quoted charge %v, want %v under %s", c, w, c.GetRelation())
		}
		delete(wantCharges, c.GetRelation())
	}
	if len(wantCharges) != 0 {
		t.Errorf("quote lacks the charges %v", wantCharges)
	}

	// Charge before send: the one transaction fails; neither part is charged, nothing sent.
	p.gate.set(ledger.ErrUnavailable)
	s, err := p.release("alice", req)
	if status.Code(err) != codes.Unavailable || len(s.sent) != 0 || len(p.charges(t, "alice")) != 0 {
		t.Fatalf("study whose charge fails: %v, %d messages, %d charges; want UNAVAILABLE, nothing", err, len(s.sent), len(p.charges(t, "alice")))
	}
	p.gate.set(nil)

	s, err = p.release("alice", req)
	if err != nil {
		t.Fatal(err)
	}
	hdr := s.sent[0].GetHeader()
	want, whole := projectionText(t, 1, 1e-5, p.recordedSensitivity(t, "alice", hdr.GetReleaseId()))
	if hdr.GetGuarantee() != want {
		t.Errorf("study header guarantee\n got: %s\nwant: %s", hdr.GetGuarantee(), want)
	}
	// The quote stated the same whole-patient sentence (nominal figures, equal here to
	// the digits shown) and the same whole-patient cost: the projection's plus the answers'.
	if i := strings.Index(want, curator.WholePatientLabel); q.GetProjection().GetWholePatient()+"." != want[i:] {
		t.Errorf("quoted whole patient\n got: %s\nwant: %s", q.GetProjection().GetWholePatient(), strings.TrimSuffix(want[i:], "."))
	}
	if wp := q.GetWholePatient(); !wp.GetBounded() || wp.GetDelta() != 1e-5 || !(wp.GetEpsilon() >= whole+pathAnswerEps) || wp.GetEpsilon() > (whole+pathAnswerEps)*(1+1e-4) {
		t.Errorf("quoted whole-patient charge %v, want ε ≈ %g (%g + %g) at δ 1e-05, not below", wp, whole+pathAnswerEps, whole, pathAnswerEps)
	}
	byKind := map[string]ledger.Receipt{}
	for _, c := range p.charges(t, "alice") {
		byKind[c.Kind] = c
	}
	pc, ac := byKind[ledger.KindProjection], byKind[ledger.KindQueryAnswers]
	if len(byKind) != 2 || pc.Relation != ledger.RelationFeatureUnit || pc.Patient.Epsilon != whole ||
		ac.Relation != ledger.RelationRecord || ac.Cost != (ledger.Cost{Epsilon: pathAnswerEps}) || ac.Patient != (ledger.PatientCost{Epsilon: pathAnswerEps}) {
		t.Errorf("study charges %+v; want the projection under feature-unit (whole patient %g) and the answers under record at ε %g", byKind, whole, pathAnswerEps)
	}
	if got := p.spent(t, "alice"); got != (ledger.Cost{Epsilon: 1 + pathAnswerEps, Delta: 1e-5}) {
		t.Errorf("study spent %+v, want the quoted (%g, 1e-05)", got, 1+pathAnswerEps)
	}
	// The replay charges nothing; the answers are paid, so a query charges nothing either.
	if s, err := p.release("alice", req); err != nil || !s.sent[0].GetHeader().GetReplayed() || len(p.charges(t, "alice")) != 2 {
		t.Errorf("study replay: %v, %d charges; want a replay, no charge", err, len(p.charges(t, "alice")))
	}
	if _, err := p.h.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{0}}); err != nil || p.spent(t, "alice") != (ledger.Cost{Epsilon: 1 + pathAnswerEps, Delta: 1e-5}) {
		t.Errorf("a query after the study: %v, spent %+v; want nothing more", err, p.spent(t, "alice"))
	}
	// Over budget: a study whose projection (ε 2.8) fits alone but not with its answers
	// is refused whole: nothing sent, neither part charged.
	s, err = p.release("dave", &curatorv1.ReleaseProjectionRequest{Dimension: 2, Epsilon: 2.8, Delta: 1e-5, WithAnswers: true})
	if status.Code(err) != codes.ResourceExhausted || len(s.sent) != 0 || len(p.charges(t, "dave")) != 0 {
		t.Errorf("over-budget study: %v, %d messages, %d charges; want RESOURCE_EXHAUSTED and nothing", err, len(s.sent), len(p.charges(t, "dave")))
	}
}
