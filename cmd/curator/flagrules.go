package main

import (
	"errors"
	"math"
	"time"

	"github.com/privbo/privbo/internal/cli"
	"github.com/privbo/privbo/pkg/curator"
)

// ledgerRules are the ranges of the ledger flags (serve, ledger, pending, record). The
// dataset cap's flags default to the identity budget's when not given; given, they must
// be a real cap.
var ledgerRules = map[string]cli.Rule{
	"budget-epsilon":                 cli.Positive,
	"budget-delta":                   cli.ZeroTo1,
	"dataset-budget-epsilon":         cli.Positive.Why("leave it unset for --budget-epsilon"),
	"dataset-budget-delta":           cli.Open01.Why("leave it unset for --budget-delta; --budget-delta 0 for no δ at all"),
	"patient-budget-epsilon":         cli.NonNegative.Why("0 for no whole-patient cap"),
	"patient-budget-delta":           cli.ZeroTo1,
	"patient-dataset-budget-epsilon": cli.NonNegative.Why("leave it unset for --patient-budget-epsilon"),
	"patient-dataset-budget-delta":   cli.ZeroTo1,
	"ledger-timeout":                 cli.PositiveDuration,
}

// serveRules are the ranges of the flags of serve and check-config (cli.CheckFlags):
// every numeric flag. A 0 is accepted only where the flag's usage says what it means
// (--noise-sd 0: no noise; --rate-limit 0: unlimited; --kusner-a 0: unset, …); elsewhere
// it would once have been taken for the default, and is refused.
var serveRules = func() map[string]cli.Rule {
	r := map[string]cli.Rule{
		"private-scaling-share":   cli.Open01,
		"noise-sd":                cli.NonNegative,
		"evaluate-timeout":        cli.PositiveDuration,
		"output-epsilon":          cli.Positive,
		"output-delta":            cli.ZeroTo1,
		"output-lower":            cli.Finite,
		"output-upper":            cli.Finite,
		"study-epsilon":           cli.Positive.Why("leave it unset for the default study's"),
		"study-delta":             cli.Open01.Why("leave it unset for the default study's share of the δ budget"),
		"exact-answers-max-rows":  cli.AtLeast(1),
		"max-query-indices":       cli.AtLeast(1),
		"max-projection-dim":      cli.AtLeast(1),
		"shutdown-timeout":        cli.PositiveDuration,
		"rate-limit":              cli.NonNegative,
		"rate-burst":              cli.AtLeast(1).Why("leave it unset for the rate"),
		"max-in-flight":           cli.AtLeast(0),
		"job-validation-fraction": cli.Open01,
		"evaluator-timeout":       cli.PositiveDuration,
		"max-job-grid":            cli.AtLeast(1),
		"max-job-iterations":      cli.AtLeast(1),
		"max-running-jobs":        cli.AtLeast(1),
		"job-lease": cli.DurationRule(func(v time.Duration) error {
			if v < time.Second {
				return errors.New("must be at least 1s: a replica renews its jobs' leases every third of it, and a shorter lease lets a slow renewal hand a live replica's job to another")
			}
			return nil
		}),
		"kusner-k1":             cli.ZeroTo1,
		"kusner-noise-variance": cli.Positive,
		"kusner-gamma-t":        cli.NonNegative,
		"kusner-a":              cli.NonNegative,
		"kusner-tau":            cli.NonNegative,
		"job-bounds-epsilon":    cli.NonNegative,
		"job-classes": cli.IntRule(func(v int64) error {
			if v != 0 && v < 2 {
				return errors.New("must be 0 (from the schema's target line, else 2) or at least 2")
			}
			return nil
		}),
		"auth-failure-rate": cli.FloatRule(func(v float64) error {
			if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
				return errors.New("must be finite and not 0 (negative: no throttle)")
			}
			return nil
		}),
		"auth-failure-burst":        cli.AtLeast(1),
		"auth-failures-logged":      cli.AtLeast(1),
		"auth-failure-log-interval": cli.PositiveDuration,
		"auth-failure-peers":        cli.AtLeast(1),
		"max-header-bytes":          cli.AtLeast(1024),
		"memory-limit":              cli.BytesAtLeast(128 << 20).Why("leave it unset for the container's or the machine's"),
		"release-memory":            cli.BytesAtLeast(curator.MinMemory).Why("leave it unset for a share of --memory-limit"),
	}
	for k, v := range ledgerRules {
		r[k] = v
	}
	return r
}()
