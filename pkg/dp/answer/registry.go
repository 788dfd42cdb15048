package answer

import (
	"fmt"
	"strings"
)

// The mechanisms' configured names. This registry is the one place they are
// spelled; everything else asks a Mechanism (or IsExact, before its parameters are
// known).
const (
	// MechanismExact releases exact answers, with no guarantee.
	MechanismExact = "none"
	// MechanismLaplace is the Laplace mechanism (Laplace).
	MechanismLaplace = "laplace"
	// MechanismGaussian is the analytic Gaussian mechanism (Gaussian).
	MechanismGaussian = "gaussian"
	// Default is the mechanism a curator daemon uses when its operator names none.
	Default = MechanismLaplace
)

// registry maps each configured name to its constructor, in the order listings name
// them.
var registry = []struct {
	name  string
	exact bool // no guarantee: takes no parameters
	pure  bool // pure ε-DP: δ must be 0
	build func(Params) (Mechanism, error)
}{
	{MechanismExact, true, false, newExact},
	{MechanismLaplace, false, true, newLaplace},
	{MechanismGaussian, false, false, newGaussian},
}

// Known reports whether name is a mechanism's configured name.
func Known(name string) bool {
	for _, r := range registry {
		if r.name == name {
			return true
		}
	}
	return false
}

// PureEpsilon reports whether the private mechanism name is pure ε-DP (its δ must be
// 0); false for the others, whose δ must lie in (0, 1), and for exact answers.
func PureEpsilon(name string) bool {
	for _, r := range registry {
		if r.name == name {
			return r.pure
		}
	}
	return false
}

// Names lists the configured names New accepts.
func Names() []string {
	out := make([]string, len(registry))
	for i, r := range registry {
		out[i] = r.name
	}
	return out
}

// NamesText lists the names for messages: "none, laplace or gaussian".
func NamesText() string {
	n := Names()
	return strings.Join(n[:len(n)-1], ", ") + " or " + n[len(n)-1]
}

// New builds the mechanism a configuration names with its parameters. The empty name
// is exact answers (a library's zero value; the daemon defaults to Default).
func New(name string, p Params) (Mechanism, error) {
	if name == "" {
		name = MechanismExact
	}
	for _, r := range registry {
		if r.name == name {
			return r.build(p)
		}
	}
	return nil, fmt.Errorf("unknown output privacy mechanism %q (want %s)", name, NamesText())
}

// IsExact reports whether name (a known one, or empty) releases exact answers: for
// checks made before the parameters are known.
func IsExact(name string) bool {
	if name == "" {
		return true
	}
	for _, r := range registry {
		if r.name == name {
			return r.exact
		}
	}
	return false
}
