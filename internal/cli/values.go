package cli

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"time"
)

// Ranges of flag values. A command registers its flags as usual, with real defaults
// (or, for a setting derived from others, a zero default its usage explains), and
// checks the flags that were given — on the command line, in a configuration file or
// from the environment — against a table of Rules right after parsing (CheckFlags). A
// value out of range, 0 among them where 0 is not a meaning the usage documents, is
// refused naming the flag; it is never taken for "unset" and replaced by a default.

// Rule is the range one flag's value must lie in.
type Rule struct {
	check func(string) error
}

// FloatRule checks a float64 flag.
func FloatRule(c func(float64) error) Rule {
	return Rule{func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		return c(v)
	}}
}

// IntRule checks an integer flag.
func IntRule(c func(int64) error) Rule {
	return Rule{func(s string) error {
		v, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return err
		}
		return c(v)
	}}
}

// DurationRule checks a time.Duration flag.
func DurationRule(c func(time.Duration) error) Rule {
	return Rule{func(s string) error {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		return c(v)
	}}
}

// Ranges of the rules.
var (
	// Positive: finite, > 0.
	Positive = FloatRule(func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
			return errors.New("must be positive and finite")
		}
		return nil
	})
	// NonNegative: finite, ≥ 0 (for settings whose usage documents what 0 means).
	NonNegative = FloatRule(func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return errors.New("must be ≥ 0 and finite")
		}
		return nil
	})
	// Open01: in (0, 1) (a fraction, a δ that must be positive).
	Open01 = FloatRule(func(v float64) error {
		if !(v > 0 && v < 1) {
			return errors.New("must lie in (0, 1)")
		}
		return nil
	})
	// ZeroTo1: in [0, 1) (a δ budget, where 0 is documented).
	ZeroTo1 = FloatRule(func(v float64) error {
		if !(v >= 0 && v < 1) {
			return errors.New("must lie in [0, 1)")
		}
		return nil
	})
	// Finite: any finite number.
	Finite = FloatRule(func(v float64) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return errors.New("must be finite")
		}
		return nil
	})
	// PositiveDuration: > 0; NonNegativeDuration: ≥ 0 (0 documented, e.g. "no limit").
	PositiveDuration = DurationRule(func(v time.Duration) error {
		if v <= 0 {
			return errors.New("must be positive")
		}
		return nil
	})
	NonNegativeDuration = DurationRule(func(v time.Duration) error {
		if v < 0 {
			return errors.New("must be ≥ 0")
		}
		return nil
	})
)

// AtLeast: an integer ≥ lo.
func AtLeast(lo int64) Rule {
	return IntRule(func(v int64) error {
		if v < lo {
			return fmt.Errorf("must be ≥ %d", lo)
		}
		return nil
	})
}

// Why adds to r the way out a refusal should name ("leave it unset for the rate").
func (r Rule) Why(hint string) Rule {
	return Rule{func(s string) error {
		if err := r.check(s); err != nil {
			return fmt.Errorf("%w (%s)", err, hint)
		}
		return nil
	}}
}

// CheckFlags checks every flag of fs that was set against its rule in rules, in the
// order of their names, and returns the first refusal as "--name VALUE: why". A flag
// set to a value that does not parse as its rule's kind is refused likewise. Defaults
// are not checked: they are in range by construction, and a zero default may stand for
// "derived from other settings", which only an explicit 0 is refused for.
func CheckFlags(fs *flag.FlagSet, rules map[string]Rule) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		r, ok := rules[f.Name]
		if err != nil || !ok {
			return
		}
		v := f.Value.String()
		if e := r.check(v); e != nil {
			err = fmt.Errorf("--%s %s: %w (run '%s -h' for its flags)", f.Name, v, e, fs.Name())
		}
	})
	return err
}
