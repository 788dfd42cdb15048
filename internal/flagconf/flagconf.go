// Package flagconf lets every flag of a command also come from a configuration file and
// from environment variables, with one precedence: command line, then environment, then
// file, then the flag's default.
//
// The file is TOML (read with github.com/pelletier/go-toml/v2) whose top-level keys are
// the flags' names (dashes allowed): `name = value`, where the value is a string, an
// integer, a float, a boolean, or an array of those (given to the flag as its elements
// joined by commas, for the flags that take comma-separated lists). A table is accepted
// only for a flag whose value implements TableValue. Unknown keys are refused, each
// with the file and its line, as is every TOML error (a key set twice among them).
//
// The environment variable of flag "budget-epsilon" with prefix "PRIVBO_CURATOR" is
// PRIVBO_CURATOR_BUDGET_EPSILON.
package flagconf

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// TableValue is a flag.Value that can also be set from a TOML table in the file (for
// settings with structure, such as a schema's columns).
type TableValue interface {
	flag.Value
	// SetTable sets the value from the table, as decoded: string keys; values of type
	// string, int64, float64, bool, []any and map[string]any.
	SetTable(table map[string]any) error
}

// EnvName returns the environment variable that sets flag name.
func EnvName(prefix, name string) string {
	return prefix + "_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// Apply sets every flag of fs that the command line did not set from the environment
// (variables with prefix) or, failing that, from the file at path ("" for none). Call it
// after fs.Parse.
func Apply(fs *flag.FlagSet, path, prefix string) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var file map[string]any
	if path != "" {
		var err error
		if file, err = ParseFile(path, fs); err != nil {
			return err
		}
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || set[f.Name] {
			return
		}
		if v, ok := os.LookupEnv(EnvName(prefix, f.Name)); ok {
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("environment %s: %w", EnvName(prefix, f.Name), e)
			}
			return
		}
		if v, ok := file[f.Name]; ok {
			if e := setFromFile(fs, f, v); e != nil {
				err = fmt.Errorf("config: %s: %s: %w", path, f.Name, e)
			}
		}
	})
	return err
}

// setFromFile gives flag f the value v decoded from the file.
func setFromFile(fs *flag.FlagSet, f *flag.Flag, v any) error {
	if t, ok := v.(map[string]any); ok {
		tv, ok := f.Value.(TableValue)
		if !ok {
			return errors.New("a table is not a value of this setting; write name = value")
		}
		return tv.SetTable(t)
	}
	s, err := text(v)
	if err != nil {
		return err
	}
	return fs.Set(f.Name, s)
}

// text is the flag text of a scalar, or of an array of scalars (joined by commas).
func text(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case int64:
		return strconv.FormatInt(v, 10), nil
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			if _, nested := e.([]any); nested {
				return "", errors.New("arrays of arrays are not supported")
			}
			s, err := text(e)
			if err != nil {
				return "", err
			}
			if strings.Contains(s, ",") {
				return "", fmt.Errorf("array element %q holds a comma, which would split it", s)
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("a %T is not a string, number or boolean (quote dates and times)", v)
}

// ParseFile reads the TOML file at path, whose top-level keys must be flags of fs, and
// returns the decoded value of each key.
func ParseFile(path string, fs *flag.FlagSet) (map[string]any, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	var doc map[string]any
	if err := toml.Unmarshal(b, &doc); err != nil {
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, col := de.Position()
			return nil, fmt.Errorf("config: %s:%d:%d: %w", path, row, col, err)
		}
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	var unknown []string
	for k := range doc {
		if fs.Lookup(k) == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		lines := keyLines(b)
		slices.SortFunc(unknown, func(a, b string) int { return lines[a] - lines[b] })
		where := path
		if n := lines[unknown[0]]; n > 0 {
			where += ":" + strconv.Itoa(n)
		}
		return nil, fmt.Errorf("config: %s: unknown setting %q (settings are the command's flag names)", where, unknown[0])
	}
	return doc, nil
}

// keyLines returns the line of each top-level key of the TOML document b. Decoding it
// strictly into an empty struct reports every key as unknown, with its position.
func keyLines(b []byte) map[string]int {
	lines := map[string]int{}
	var strict *toml.StrictMissingError
	if err := toml.NewDecoder(bytes.NewReader(b)).DisallowUnknownFields().Decode(&struct{}{}); errors.As(err, &strict) {
		for _, e := range strict.Errors {
			if k := e.Key(); len(k) > 0 {
				if _, seen := lines[k[0]]; !seen {
					lines[k[0]], _ = e.Position()
				}
			}
		}
	}
	return lines
}
