// Package noise names the family of the noise a curator's answers carry: the one
// vocabulary of the answer mechanisms (pkg/dp/answer), the wire (curator.proto's
// NoiseFamily, converted by name in pkg/server and pkg/curatorclient), the study file
// (stored by name) and the modeler's likelihood. It imports nothing of privbo, so both
// sides of the wire link it. A new family is a line here and a value in the proto's enum.
package noise

import "fmt"

// Family is the distribution of an answer's noise. The zero value, Unstated, is the
// family of answers from a curator or a study file that did not state one.
type Family int

// The families; None is exact answers, with no noise.
const (
	Unstated Family = iota
	None
	Laplace
	Gaussian
)

// names spells each family, as study files store it and curator.proto's
// NOISE_FAMILY_<NAME> values name it.
var names = [...]string{Unstated: "unstated", None: "none", Laplace: "laplace", Gaussian: "gaussian"}

// Families lists the stated families (every Family but Unstated).
func Families() []Family {
	out := make([]Family, len(names)-1)
	for i := range out {
		out[i] = Family(i + 1)
	}
	return out
}

func (f Family) String() string {
	if f < 0 || int(f) >= len(names) {
		return fmt.Sprintf("Family(%d)", int(f))
	}
	return names[f]
}

// Parse returns the family named name.
func Parse(name string) (Family, error) {
	for f, n := range names {
		if n == name {
			return Family(f), nil
		}
	}
	return Unstated, fmt.Errorf("noise: unknown noise family %q", name)
}

// MarshalText stores the family by name; UnmarshalText reads it back.
func (f Family) MarshalText() ([]byte, error) {
	_, err := Parse(f.String())
	return []byte(f.String()), err
}

func (f *Family) UnmarshalText(b []byte) (err error) {
	*f, err = Parse(string(b))
	return err
}
