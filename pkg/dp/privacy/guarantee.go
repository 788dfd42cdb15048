package privacy

import (
	"fmt"

	"github.com/privbo/privbo/internal/figure"
)

// Guarantee is what a mechanism states about one release, as data: its name, the
// (ε, δ) and the relation they are stated for, how it works and where that is
// proved. Mechanisms build it (see package projection's Mechanism and package
// answer's Mechanism); String and Summary are the one place it becomes text.
type Guarantee struct {
	// Mechanism is the mechanism's configured name.
	Mechanism      string
	Epsilon, Delta float64
	Relation       Relation
	// Neighbours says in words which datasets Relation makes neighbours.
	Neighbours string
	// Method says what the release is ("the JL projection plus Gaussian noise …").
	Method string
	// Reference names the paper the guarantee or the mechanism comes from ("" if none).
	Reference string
	// Claim and Broken describe a mechanism whose claimed (ε, δ) does not hold: where
	// it is claimed ("as claimed by its Theorem 1") and why it fails. Broken is ""
	// when the guarantee holds.
	Claim, Broken string
	// None marks a release with no guarantee at all (ε = ∞), chosen explicitly;
	// Method then says what is released and Claim whose choice it is.
	None bool
}

// Holds reports whether the stated (ε, δ) is a guarantee.
func (g Guarantee) Holds() bool { return !g.None && g.Broken == "" }

// String is the guarantee of one release: "(ε=1, δ=1e-05)-DP under the record
// neighbour relation (…): mechanism …, … (reference)", or what is claimed and why
// it does not hold, or that there is none.
func (g Guarantee) String() string {
	switch {
	case g.None:
		return fmt.Sprintf("no guarantee (ε = ∞): %s (%s)", g.Method, g.Claim)
	case g.Broken != "":
		return fmt.Sprintf("mechanism %s (%s): (ε=%s, δ=%s) under the %s neighbour relation %s, which does not hold: %s",
			g.Mechanism, g.Reference, figure.Up(g.Epsilon), figure.Up(g.Delta), g.Relation, g.Claim, g.Broken)
	}
	s := fmt.Sprintf("(ε=%s, δ=%s)-DP under the %s neighbour relation (%s): mechanism %s, %s", figure.Up(g.Epsilon), figure.Up(g.Delta), g.Relation, g.Neighbours, g.Mechanism, g.Method)
	if g.Reference != "" {
		s += " (" + g.Reference + ")"
	}
	return s
}

// Summary is the guarantee of every release of the mechanism, for a statement made
// before any (ε, δ) is chosen, ending in the punctuation that opens what follows:
// "mechanism gaussian, (ε, δ)-DP at the (ε, δ) of each request under the
// feature-unit neighbour relation,".
func (g Guarantee) Summary() string {
	switch {
	case g.None:
		return g.String() + ";"
	case g.Broken != "":
		return fmt.Sprintf("mechanism %s (%s), whose claimed (ε, δ) under the %s neighbour relation does not hold;", g.Mechanism, g.Reference, g.Relation)
	}
	return fmt.Sprintf("mechanism %s, (ε, δ)-DP at the (ε, δ) of each request under the %s neighbour relation,", g.Mechanism, g.Relation)
}
