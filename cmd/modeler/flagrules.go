package main

import "github.com/privbo/privbo/internal/cli"

// runRules are the ranges of the numeric flags of `modeler run` (cli.CheckFlags),
// checked on what the command line gives before a stored study fills in the rest. A 0
// is accepted where the usage says what it means (--fit-every 0: fixed; --beta 0: the
// schedule; --timeout 0: no limit); --epsilon, --delta and the GP's variances have no
// number for a default: left out, the curator's default study or a value derived from
// the data is used, and a 0 given is refused.
var runRules = map[string]cli.Rule{
	"epsilon":         cli.Positive.Why("leave it out for the curator's default study"),
	"delta":           cli.Open01.Why("leave it out for the curator's default study"),
	"iterations":      cli.AtLeast(1),
	"batch":           cli.AtLeast(1),
	"lengthscale":     cli.Positive.Why("leave it out for the median distance of the released rows to their mean"),
	"signal-variance": cli.Positive.Why("leave it out for the default prior"),
	"noise-variance":  cli.Positive.Why("leave it out for the default prior"),
	"fit-every":       cli.AtLeast(0),
	"delta-ucb":       cli.Open01,
	"beta":            cli.NonNegative,
	"initial-index":   cli.AtLeast(-1),
	"confirm-rows":    cli.AtLeast(0),
	"confirm-passes":  cli.AtLeast(1),
	"timeout":         cli.NonNegativeDuration,
}

// simulateRules are the ranges of the numeric flags of `modeler simulate`.
var simulateRules = map[string]cli.Rule{
	"grid":                  cli.AtLeast(2),
	"synthetic-lengthscale": cli.Positive.Why("leave it out for 0.25 × 25"),
	"epsilon":               cli.Positive,
	"delta":                 cli.Open01,
	"output-epsilon":        cli.Positive,
	"output-delta":          cli.ZeroTo1,
	"output-lower":          cli.Finite,
	"output-upper":          cli.Finite,
	"iterations":            cli.AtLeast(1),
	"runs":                  cli.AtLeast(1),
	"batch":                 cli.AtLeast(1),
	"draws":                 cli.AtLeast(1),
	"workers":               cli.AtLeast(1),
	"lengthscale":           cli.Positive.Why("leave it out for the default"),
	"signal-variance":       cli.Positive.Why("leave it out for the default"),
	"noise-variance":        cli.Positive.Why("leave it out for the default"),
	"delta-ucb":             cli.Open01,
	"fit-every":             cli.AtLeast(0),
}
