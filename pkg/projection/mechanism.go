package projection

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/privbo/privbo/pkg/dp"
	"github.com/privbo/privbo/pkg/dp/privacy"
)

// Mechanism is a way of releasing a random projection of the data privately. A
// curator parses its configured name once (ParseMechanism) and asks the value
// everything that differs between mechanisms: the relation and guarantee it
// states, the noise it adds, how it computes a release and what that costs in
// memory, and what one release means for a whole record. Adding a mechanism is a
// type implementing it and a line in the registry below.
//
// Every mechanism here is stated for privacy.RelationFeatureUnit: the datasets
// differ in one record's feature vector by at most one protected unit, after the
// curator's scaling and clipping.
type Mechanism interface {
	// Name is the mechanism's configured name (MechanismGaussian, MechanismLifted).
	Name() string
	// Relation is the neighbour relation its (ε, δ) is stated for.
	Relation() privacy.Relation
	// Guarantee states a release at (ε, δ) (privacy.Guarantee renders it).
	Guarantee(epsilon, delta float64) privacy.Guarantee
	// AddsNoise reports whether the release carries noise in every coordinate, so
	// that a release wider than the data (r > d) adds noise and keeps no more
	// information than r = d.
	AddsNoise() bool
	// Baseline reports whether this is the paper's own mechanism (Kharkovskii et
	// al. 2020, Algorithm 1), which predates the choice of mechanism: its releases'
	// records and ids name no mechanism.
	Baseline() bool
	// NoiseSD is the σ added to every entry of an n × r release of d features at
	// (ε, δ), from public quantities only; 0 for a mechanism without noise.
	NoiseSD(n, d, r int, epsilon, delta float64) (float64, error)
	// Check reports, before the data are read, whether a release of p can be made
	// (for the Gaussian mechanism, whether its noise can be calibrated).
	Check(n, d int, p Params) error
	// Stream computes the release of the row-major n×d matrix x while it is read;
	// noise is drawn from crypto/rand.
	Stream(ctx context.Context, x []float64, n, d int, p Params, src Source) (*Stream, error)
	// MemoryNeed bounds the bytes Stream allocates for an n×r release of d features
	// (see MemoryNeed).
	MemoryNeed(n, d, r int) int64
	// NoWholeRecord says why no release of the mechanism has a guarantee for the
	// replacement of a whole record at any distance, whatever the scaling; "" when
	// WholeRecord gives one.
	NoWholeRecord() string
	// WholeRecord evaluates a release's ε at δ at each public distance of dists
	// (in protected units, increasing, the clip diameter last) and its ρ of zCDP
	// at the last, for the release rep (nil: nominal figures, valid for every
	// release dimension and sensitivity, see NominalMargin).
	WholeRecord(epsilon, delta float64, dists []float64, rep *Report) ([]dp.DistanceEpsilon, float64, error)
}

// The mechanisms' configured names. This registry is the one place they are
// spelled; everything else asks a Mechanism.
const (
	// MechanismLifted is the paper's Algorithm 1 (Project).
	MechanismLifted = "lifted"
	// MechanismGaussian is the JL projection followed by the Gaussian
	// mechanism on the whole release (ProjectGaussian).
	MechanismGaussian = "gaussian"
)

// mechanisms maps each configured name to its mechanism, in the order listings
// name them.
var mechanisms = []Mechanism{Lifted{}, Gaussian{}}

// MechanismNames lists the configured names ParseMechanism accepts.
func MechanismNames() []string {
	out := make([]string, len(mechanisms))
	for i, m := range mechanisms {
		out[i] = m.Name()
	}
	return out
}

// ParseMechanism returns the mechanism a configuration names.
func ParseMechanism(name string) (Mechanism, error) {
	for _, m := range mechanisms {
		if m.Name() == name {
			return m, nil
		}
	}
	return nil, fmt.Errorf("projection: unknown projection mechanism %q (want %s)", name, strings.Join(MechanismNames(), " or "))
}

// Gaussian is the JL projection plus Gaussian noise calibrated to its sensitivity
// (ProjectGaussian; Kenthapadi et al. 2013): (ε, δ)-DP under the feature-unit
// relation against any adversary.
type Gaussian struct{}

// Lifted is Kharkovskii et al. (2020)'s Algorithm 1 (Project), kept to reproduce
// the paper: it adds no noise, so the release is the data times a fixed matrix
// and its claimed (ε, δ) does not hold.
type Lifted struct{}

func (Gaussian) Name() string { return MechanismGaussian }
func (Lifted) Name() string   { return MechanismLifted }

func (Gaussian) Relation() privacy.Relation { return privacy.RelationFeatureUnit }
func (Lifted) Relation() privacy.Relation   { return privacy.RelationFeatureUnit }

// featureUnitNeighbours glosses the feature-unit relation.
const featureUnitNeighbours = "one record's feature vector changes by at most one protected unit"

func (m Gaussian) Guarantee(epsilon, delta float64) privacy.Guarantee {
	return privacy.Guarantee{Mechanism: m.Name(), Epsilon: epsilon, Delta: delta, Relation: m.Relation(), Neighbours: featureUnitNeighbours,
		Method: "the JL projection plus Gaussian noise calibrated to its sensitivity", Reference: "Kenthapadi et al. 2013"}
}

func (m Lifted) Guarantee(epsilon, delta float64) privacy.Guarantee {
	return privacy.Guarantee{Mechanism: m.Name(), Epsilon: epsilon, Delta: delta, Relation: m.Relation(), Neighbours: featureUnitNeighbours,
		Method: "the data times a fixed matrix", Reference: "Kharkovskii et al. 2020, Algorithm 1", Claim: "as claimed by its Theorem 1",
		Broken: "the release is the data times a fixed matrix, so an adversary who knows d+1 rows recovers linear measurements of every other row; " +
			"curators who need the guarantee use the " + MechanismGaussian + " projection mechanism"}
}

func (Gaussian) AddsNoise() bool { return true }
func (Lifted) AddsNoise() bool   { return false }

func (Gaussian) Baseline() bool { return false }
func (Lifted) Baseline() bool   { return true }

func (Gaussian) NoiseSD(n, d, r int, epsilon, delta float64) (float64, error) {
	return NominalNoiseSD(n, d, r, epsilon, delta)
}
func (Lifted) NoiseSD(int, int, int, float64, float64) (float64, error) { return 0, nil }

func (Gaussian) Check(n, d int, p Params) error { return CheckGaussian(n, d, p) }
func (Lifted) Check(int, int, Params) error     { return nil }

func (Gaussian) Stream(ctx context.Context, x []float64, n, d int, p Params, src Source) (*Stream, error) {
	return ProjectGaussianStream(ctx, x, n, d, p, src, CryptoNoise)
}

func (Lifted) Stream(ctx context.Context, x []float64, n, d int, p Params, src Source) (*Stream, error) {
	return ProjectStream(ctx, x, n, d, p, src)
}

func (Gaussian) MemoryNeed(n, d, r int) int64 { return memoryNeed(n, d, r, false) }
func (Lifted) MemoryNeed(n, d, r int) int64   { return memoryNeed(n, d, r, true) }

func (Gaussian) NoWholeRecord() string { return "" }
func (Lifted) NoWholeRecord() string {
	return "the lifted mechanism's claimed guarantee does not hold even for one unit, so it holds for no larger distance"
}

// NominalMargin makes whole-record figures computed at the nominal sensitivity 1 and
// one dimension upper bounds for every sensitivity Δ and dimension m. The
// VectorGaussian's ε at a distance of D units depends on Δ and m only through the ratio
// s_D/s = (D·a + √m)/(a + √m), a = Δ/2^k the sensitivity in lattice steps, and its
// lattice has √m/a ≤ 2⁻²⁰ (dp.NewVectorGaussian), so the ratio, hence ρ_D = s_D²/(2N)
// (Canonne, Kamath & Steinke 2020, Theorem 14), moves by less than 2⁻¹⁹ ≈ 1.9e-6
// relative between any two (Δ, m), and ε (increasing and at most linear in ρ at every
// Rényi order) by no more; 1e-5 leaves a margin of five times that.
const NominalMargin = 1e-5

// WholeRecord evaluates the release's ε at δ for dists and its ρ at the last: the ε at
// the last distance is ρ converted at δ (dp.VectorGaussian.EpsilonAtDistance), so it is
// the (ε, δ) at the release's own δ. With rep (and its sensitivity) known the release's
// own mechanism is used (rep.Noise, or one calibrated to rep's n·r values and
// sensitivity); otherwise nominal figures, at sensitivity 1 and one value, raised by
// NominalMargin to bound every release.
func (Gaussian) WholeRecord(epsilon, delta float64, dists []float64, rep *Report) ([]dp.DistanceEpsilon, float64, error) {
	nominal := rep == nil || !(rep.Sensitivity > 0) || rep.N*rep.R < 1
	g := (*dp.VectorGaussian)(nil)
	if !nominal {
		g = rep.Noise
	}
	if g == nil {
		sens, m := 1.0, 1
		if !nominal {
			sens, m = rep.Sensitivity, rep.N*rep.R
		}
		var err error
		if g, err = dp.NewVectorGaussian(epsilon, delta, sens, m); err != nil {
			return nil, 0, fmt.Errorf("whole-patient table: %w", err)
		}
	}
	rows, err := dp.WholeRecordTable(g, delta, dists)
	if err != nil {
		return nil, 0, err
	}
	rho, err := g.RhoAtDistance(dists[len(dists)-1])
	if err != nil {
		return nil, 0, err
	}
	if nominal {
		rho *= 1 + NominalMargin // the same margin bounds ρ for every Δ and m
		for i := range rows {
			rows[i].Epsilon *= 1 + NominalMargin // +Inf stays +Inf
			if rows[i].Units <= 1 {
				// At one unit or less the calibrated (ε, δ) holds for every Δ and m.
				rows[i].Epsilon = math.Min(rows[i].Epsilon, epsilon)
			}
		}
	}
	return rows, rho, nil
}

func (m Lifted) WholeRecord(float64, float64, []float64, *Report) ([]dp.DistanceEpsilon, float64, error) {
	return nil, 0, fmt.Errorf("projection: %s", m.NoWholeRecord())
}
