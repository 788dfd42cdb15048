package study

import (
	"fmt"
	"math"
	"strings"
)

// Direction is whether a study looks for the largest answer or the smallest, as
// Vizier's goal and Optuna's direction. The zero value "" maximises, so studies stored
// before the setting existed keep their meaning; Minimize is the only other value a
// Settings holds (ParseDirection normalises).
type Direction string

const (
	// Maximize looks for the largest answer (the paper's setting, and the default).
	Maximize Direction = ""
	// Minimize looks for the smallest answer (a cost, an error, a loss).
	Minimize Direction = "minimize"
)

// ParseDirection reads "maximize" or "minimize" (also the British spellings and the
// short "max", "min"); "" is Maximize.
func ParseDirection(s string) (Direction, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "max", "maximize", "maximise":
		return Maximize, nil
	case "min", "minimize", "minimise":
		return Minimize, nil
	}
	return "", fmt.Errorf("study: direction %q: want maximize or minimize", s)
}

// String is "maximize" or "minimize".
func (d Direction) String() string {
	if d == Minimize {
		return "minimize"
	}
	return "maximize"
}

// Sign is +1 when maximising and −1 when minimising: a minimisation of y is the
// maximisation of Sign·y, which is how the modeler's GP-UCB (a maximiser) runs it.
func (d Direction) Sign() float64 {
	if d == Minimize {
		return -1
	}
	return 1
}

// Better reports whether a is strictly better than b in direction d. Every value is
// better than NaN (no value yet).
func (d Direction) Better(a, b float64) bool {
	if math.IsNaN(b) {
		return !math.IsNaN(a)
	}
	if d == Minimize {
		return a < b
	}
	return a > b
}

// Regret is the simple regret of best against the known optimum: optimum − best when
// maximising, best − optimum when minimising (≥ 0 either way when optimum is the true
// optimum).
func (d Direction) Regret(optimum, best float64) float64 {
	return d.Sign() * (optimum - best)
}

// Extreme is the word for the best value in direction d: "highest" or "lowest".
func (d Direction) Extreme() string {
	if d == Minimize {
		return "lowest"
	}
	return "highest"
}
