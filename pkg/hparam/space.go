package hparam

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Space is the grid Λ = P_1 × … × P_D over its Params. Build it with
// NewSpace (or ParseSpace), which validates it and copies the Params; a Space
// is immutable afterwards and safe for concurrent use.
type Space struct {
	Params []Param
}

// NewSpace returns the grid over the given Params: at least one, with
// distinct names, each valid (see Param.Validate), and at most MaxSize points
// in all.
func NewSpace(params ...Param) (Space, error) {
	if len(params) == 0 {
		return Space{}, fmt.Errorf("hparam: a space needs at least one parameter")
	}
	s := Space{Params: make([]Param, len(params))}
	size := 1
	seen := make(map[string]bool, len(params))
	for i, p := range params {
		if err := p.validate(); err != nil {
			return Space{}, err
		}
		if seen[p.Name] {
			return Space{}, fmt.Errorf("hparam: parameter %q appears twice", p.Name)
		}
		seen[p.Name] = true
		if size > MaxSize/len(p.Values) {
			return Space{}, fmt.Errorf("hparam: space has more than %d points (%s)", MaxSize, sizeText(params))
		}
		size *= len(p.Values)
		s.Params[i] = Param{Name: p.Name, Values: slices.Clone(p.Values), Scale: p.Scale}
	}
	return s, nil
}

func sizeText(params []Param) string {
	parts := make([]string, len(params))
	for i, p := range params {
		parts[i] = fmt.Sprintf("%s: %d", p.Name, len(p.Values))
	}
	return strings.Join(parts, ", ")
}

// ParseSpace reads one Param per spec (see ParseParam) and returns their grid.
func ParseSpace(specs ...string) (Space, error) {
	params := make([]Param, len(specs))
	for i, spec := range specs {
		p, err := ParseParam(spec)
		if err != nil {
			return Space{}, err
		}
		params[i] = p
	}
	return NewSpace(params...)
}

// Size returns |Λ|, the number of grid points (0 for the zero Space).
func (s Space) Size() int {
	if len(s.Params) == 0 {
		return 0
	}
	n := 1
	for _, p := range s.Params {
		n *= len(p.Values)
	}
	return n
}

// Dim returns the number of Params.
func (s Space) Dim() int { return len(s.Params) }

// Names returns the Params' names in order.
func (s Space) Names() []string {
	names := make([]string, len(s.Params))
	for i, p := range s.Params {
		names[i] = p.Name
	}
	return names
}

// String returns the Params' specs separated by spaces.
func (s Space) String() string {
	parts := make([]string, len(s.Params))
	for i, p := range s.Params {
		parts[i] = p.String()
	}
	return strings.Join(parts, " ")
}

// Point returns the i-th grid point as a map from name to value, in
// row-major order (the last Param varies fastest). It panics unless
// 0 ≤ i < Size().
func (s Space) Point(i int) map[string]float64 {
	s.checkIndex(i)
	m := make(map[string]float64, len(s.Params))
	for j := len(s.Params) - 1; j >= 0; j-- {
		p := s.Params[j]
		k := len(p.Values)
		m[p.Name] = p.Values[i%k]
		i /= k
	}
	return m
}

// Values returns the i-th grid point's values ordered like Params, in dst if
// it has the capacity. It panics unless 0 ≤ i < Size().
func (s Space) Values(i int, dst []float64) []float64 {
	s.checkIndex(i)
	if cap(dst) < len(s.Params) {
		dst = make([]float64, len(s.Params))
	}
	dst = dst[:len(s.Params)]
	for j := len(s.Params) - 1; j >= 0; j-- {
		v := s.Params[j].Values
		dst[j] = v[i%len(v)]
		i /= len(v)
	}
	return dst
}

func (s Space) checkIndex(i int) {
	if n := s.Size(); i < 0 || i >= n {
		panic(fmt.Sprintf("hparam: point %d out of range [0, %d)", i, n))
	}
}

// Index returns the number of the grid point with the given values, and
// whether there is one: values must name every Param exactly once and give
// one of its values exactly (float64 equality; values read back from a
// decimal form printed with full precision, as encoding/json and
// strconv.FormatFloat(v, 'g', -1, 64) print them, compare equal).
func (s Space) Index(values map[string]float64) (int, bool) {
	if len(s.Params) == 0 || len(values) != len(s.Params) {
		return 0, false
	}
	idx := 0
	for _, p := range s.Params {
		v, ok := values[p.Name]
		if !ok {
			return 0, false
		}
		k, found := slices.BinarySearch(p.Values, v)
		if !found {
			return 0, false
		}
		idx = idx*len(p.Values) + k
	}
	return idx, true
}

// Coords returns the grid points' kernel coordinates as a row-major
// Size()×Dim() matrix: column j holds Param j's value mapped to [0, 1],
// u = (v − v_min)/(v_max − v_min), computed on log v for a Log-scale Param,
// and u = 0 for a Param with a single value. The smallest value maps to
// exactly 0 and the largest to exactly 1.
func (s Space) Coords() []float64 {
	n, d := s.Size(), s.Dim()
	unit := make([][]float64, d)
	for j, p := range s.Params {
		unit[j] = unitValues(p)
	}
	out := make([]float64, n*d)
	for i := range n {
		rem := i
		row := out[i*d : (i+1)*d]
		for j := d - 1; j >= 0; j-- {
			u := unit[j]
			row[j] = u[rem%len(u)]
			rem /= len(u)
		}
	}
	return out
}

func unitValues(p Param) []float64 {
	u := make([]float64, len(p.Values))
	k := len(u)
	if k == 1 {
		return u
	}
	f := func(v float64) float64 { return v }
	if p.Scale == Log {
		f = math.Log
	}
	lo, hi := f(p.Values[0]), f(p.Values[k-1])
	for i, v := range p.Values {
		// Clamp: rounding must not leave [0, 1].
		// Halves: hi − lo must not overflow for a linear range over most of
		// the float64 line.
		u[i] = min(1, max(0, (f(v)/2-lo/2)/(hi/2-lo/2)))
	}
	u[0], u[k-1] = 0, 1
	return u
}
