// Package modeler is the modeler's side of PO-GP-UCB (SPEC §2.3, Algorithm 2 of
// Kharkovskii et al. 2020): it asks the curator for a private projection Z of the
// dataset, runs GP-UCB over the rows of Z, and queries the curator for the output of one
// chosen row per iteration. It never sees a raw row; all it holds is Z and the answers.
package modeler

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/privbo/privbo/pkg/gpucb"
	"github.com/privbo/privbo/pkg/matrixio"
	curatorv1 "github.com/privbo/privbo/proto/privbo/curator/v1"
)

// Config configures a PO-GP-UCB study.
type Config struct {
	// R, Epsilon, Delta are the projection's parameters (SPEC §2.1); Label optionally
	// asks for an independent release with the same parameters.
	R              int
	Epsilon, Delta float64
	Label          string
	// Iterations T ≥ 1: the number of queries, including the initial one.
	Iterations int
	// GP settings. Lengthscale 0 takes gpucb.DefaultLengthscale of Z; SignalVariance 0
	// means 1; NoiseVariance 0 means 1e-3 (both in standardised output units).
	Kernel                                     gpucb.Kernel
	Lengthscale, SignalVariance, NoiseVariance float64
	// DeltaUCB is δ' of the β_t schedule (default 0.05); ConstantBeta > 0 overrides it.
	DeltaUCB, ConstantBeta float64
	// AllowRepeats lets GP-UCB choose rows it has already queried (they cost nothing
	// but spend an iteration); by default it moves on to unqueried rows.
	AllowRepeats bool
	// RawOutputs turns off output standardisation.
	RawOutputs bool
	// InitialIndex is the first row queried; -1 (default) draws it uniformly at random,
	// as the paper's runs do.
	InitialIndex int
	// Progress, if set, is called after every observation.
	Progress func(Step)
}

// Step reports one observation.
type Step struct {
	Iteration, Index int
	Value            float64
	BestIndex        int
	BestValue        float64
	Replayed         bool
	EpsilonRemaining float64
	DeltaRemaining   float64
}

// Result is the summary of a study.
type Result struct {
	Dataset    string    `json:"dataset"`
	ReleaseID  string    `json:"release_id"`
	Rows       int       `json:"rows"`
	R          int       `json:"r"`
	BestIndex  int       `json:"best_index"`
	BestValue  float64   `json:"best_value"`
	Iterations int       `json:"iterations"`
	Queried    []int     `json:"queried"`
	Values     []float64 `json:"values"`
	// Lengthscale actually used.
	Lengthscale      float64 `json:"lengthscale"`
	EpsilonSpent     float64 `json:"epsilon_spent"`
	DeltaSpent       float64 `json:"delta_spent"`
	EpsilonRemaining float64 `json:"epsilon_remaining"`
	DeltaRemaining   float64 `json:"delta_remaining"`
}

func (c *Config) defaults() error {
	if c.Iterations < 1 {
		return fmt.Errorf("modeler: iterations must be ≥ 1, got %d", c.Iterations)
	}
	if c.R < 1 {
		return fmt.Errorf("modeler: projection dimension r must be ≥ 1, got %d", c.R)
	}
	if c.SignalVariance == 0 {
		c.SignalVariance = 1
	}
	if c.NoiseVariance == 0 {
		c.NoiseVariance = 1e-3
	}
	if c.DeltaUCB == 0 {
		c.DeltaUCB = 0.05
	}
	return nil
}

// Run performs a study against the curator behind client.
func Run(ctx context.Context, client curatorv1.CuratorServiceClient, cfg Config) (*Result, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	info, err := client.GetDatasetInfo(ctx, &curatorv1.GetDatasetInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("modeler: dataset info: %w", err)
	}
	proj, err := FetchProjection(ctx, client, &curatorv1.ReleaseProjectionRequest{
		Dimension: uint32(cfg.R), Epsilon: cfg.Epsilon, Delta: cfg.Delta, Label: cfg.Label,
	})
	if err != nil {
		return nil, err
	}
	n := proj.Rows
	if cfg.Iterations > n && !cfg.AllowRepeats {
		return nil, fmt.Errorf("modeler: %d iterations exceed the %d rows; allow repeats or ask for fewer", cfg.Iterations, n)
	}
	ls := cfg.Lengthscale
	if ls == 0 {
		ls = gpucb.DefaultLengthscale(proj.Z, n, proj.Cols)
	}
	gp, err := gpucb.New(proj.Z, n, proj.Cols, gpucb.Config{
		Kernel: cfg.Kernel, Lengthscale: ls, SignalVariance: cfg.SignalVariance, NoiseVariance: cfg.NoiseVariance,
		Delta: cfg.DeltaUCB, ConstantBeta: cfg.ConstantBeta, SkipQueried: !cfg.AllowRepeats,
		Standardise: !cfg.RawOutputs, Capacity: cfg.Iterations,
	})
	if err != nil {
		return nil, fmt.Errorf("modeler: %w", err)
	}
	res := &Result{Dataset: info.GetName(), ReleaseID: proj.ReleaseID, Rows: n, R: proj.Cols, BestIndex: -1,
		BestValue: math.Inf(-1), Lengthscale: ls}
	var budget *curatorv1.Budget = proj.Budget
	for t := 0; t < cfg.Iterations; t++ {
		var i int
		if t == 0 {
			if i, err = initialIndex(cfg.InitialIndex, n); err != nil {
				return nil, err
			}
		} else if i, err = gp.Next(); err != nil {
			return nil, fmt.Errorf("modeler: iteration %d: %w", t+1, err)
		}
		resp, err := client.Query(ctx, &curatorv1.QueryRequest{Indices: []uint64{uint64(i)}})
		if err != nil {
			return res, fmt.Errorf("modeler: query of row %d: %w", i, err)
		}
		obs := resp.GetObservations()
		if len(obs) != 1 || obs[0].GetIndex() != uint64(i) {
			return res, fmt.Errorf("modeler: curator answered %d observations for one index", len(obs))
		}
		y := obs[0].GetValue()
		if err := gp.Observe(i, y); err != nil {
			return res, fmt.Errorf("modeler: %w", err)
		}
		budget = resp.GetBudget()
		res.Queried = append(res.Queried, i)
		res.Values = append(res.Values, y)
		if y > res.BestValue {
			res.BestValue, res.BestIndex = y, i
		}
		res.Iterations = t + 1
		if cfg.Progress != nil {
			cfg.Progress(Step{Iteration: t + 1, Index: i, Value: y, BestIndex: res.BestIndex, BestValue: res.BestValue,
				Replayed: obs[0].GetReplayed(), EpsilonRemaining: budget.GetEpsilonRemaining(), DeltaRemaining: budget.GetDeltaRemaining()})
		}
	}
	res.EpsilonSpent, res.DeltaSpent = budget.GetEpsilonSpent(), budget.GetDeltaSpent()
	res.EpsilonRemaining, res.DeltaRemaining = budget.GetEpsilonRemaining(), budget.GetDeltaRemaining()
	return res, nil
}

func initialIndex(i, n int) (int, error) {
	if i >= 0 {
		if i >= n {
			return 0, fmt.Errorf("modeler: initial index %d is out of range [0, %d)", i, n)
		}
		return i, nil
	}
	v, err := rand.Int(rand.Reader, big.NewInt(int64(n)))
	if err != nil {
		return 0, fmt.Errorf("modeler: %w", err)
	}
	return int(v.Int64()), nil
}

// Projection is a released matrix as received.
type Projection struct {
	ReleaseID  string
	Rows, Cols int
	Replayed   bool
	Guarantee  string
	Budget     *curatorv1.Budget
	// Z is row-major Rows × Cols.
	Z []float64
}

// FetchProjection receives a projection release, checking chunk order, sizes and the
// trailer's SHA-256.
func FetchProjection(ctx context.Context, client curatorv1.CuratorServiceClient, req *curatorv1.ReleaseProjectionRequest) (*Projection, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := client.ReleaseProjection(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("modeler: projection: %w", err)
	}
	msg, err := stream.Recv()
	if err != nil {
		return nil, fmt.Errorf("modeler: projection: %w", err)
	}
	h := msg.GetHeader()
	if h == nil {
		return nil, errors.New("modeler: projection stream did not start with a header")
	}
	const maxElems = 1 << 31
	if h.GetRows() == 0 || h.GetCols() == 0 || h.GetRows()*uint64(h.GetCols()) > maxElems {
		return nil, fmt.Errorf("modeler: projection header announces an unusable %d × %d matrix", h.GetRows(), h.GetCols())
	}
	p := &Projection{ReleaseID: h.GetReleaseId(), Rows: int(h.GetRows()), Cols: int(h.GetCols()), Replayed: h.GetReplayed(),
		Guarantee: h.GetGuarantee(), Budget: h.GetBudget()}
	p.Z = make([]float64, p.Rows*p.Cols)
	sum := sha256.New()
	next := 0
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			return nil, errors.New("modeler: projection stream ended without a trailer")
		}
		if err != nil {
			return nil, fmt.Errorf("modeler: projection: %w", err)
		}
		switch part := msg.GetPart().(type) {
		case *curatorv1.ReleaseProjectionResponse_Chunk:
			c := part.Chunk
			rows := int(c.GetRowCount())
			if c.GetFirstRow() != uint64(next) || rows <= 0 || next+rows > p.Rows {
				return nil, fmt.Errorf("modeler: projection chunk for rows [%d, %d) out of order (expected row %d of %d)", c.GetFirstRow(), c.GetFirstRow()+uint64(rows), next, p.Rows)
			}
			if err := matrixio.DecodeFloat64s(p.Z[next*p.Cols:(next+rows)*p.Cols], c.GetData()); err != nil {
				return nil, fmt.Errorf("modeler: projection chunk at row %d: %w", next, err)
			}
			sum.Write(c.GetData())
			next += rows
		case *curatorv1.ReleaseProjectionResponse_Trailer:
			if next != p.Rows {
				return nil, fmt.Errorf("modeler: projection stream ended after %d of %d rows", next, p.Rows)
			}
			if string(sum.Sum(nil)) != string(part.Trailer.GetSha256()) {
				return nil, errors.New("modeler: projection checksum mismatch; the matrix was damaged in transit")
			}
			return p, nil
		default:
			return nil, errors.New("modeler: unexpected message in projection stream")
		}
	}
}
