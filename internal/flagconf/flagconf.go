// Package flagconf lets every flag of a command also come from a configuration file and
// from environment variables, with one precedence: command line, then environment, then
// file, then the flag's default.
//
// The file is flat TOML: one `name = value` per line, where name is a flag's name
// (dashes allowed), value a TOML basic "string", literal 'string', integer, float or
// boolean; '#' starts a comment. Tables, arrays and multi-line strings are refused, as
// are unknown and repeated names, each with the file and line.
//
// The environment variable of flag "budget-epsilon" with prefix "PRIVBO_CURATOR" is
// PRIVBO_CURATOR_BUDGET_EPSILON.
package flagconf

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

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
	var file map[string]string
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
			if e := fs.Set(f.Name, v); e != nil {
				err = fmt.Errorf("%s: %s: %w", path, f.Name, e)
			}
		}
	})
	return err
}

// ParseFile reads a flat TOML file whose names must be flags of fs.
func ParseFile(path string, fs *flag.FlagSet) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		name, value, ok, err := parseLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("config: %s:%d: %w", path, line, err)
		}
		if !ok {
			continue
		}
		if fs.Lookup(name) == nil {
			return nil, fmt.Errorf("config: %s:%d: unknown setting %q (settings are the command's flag names)", path, line, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("config: %s:%d: %q is set twice", path, line, name)
		}
		out[name] = value
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("config: %s: %w", path, err)
	}
	return out, nil
}

// parseLine returns the name and value of one line; ok is false for blank and comment
// lines.
func parseLine(text string) (name, value string, ok bool, err error) {
	s := strings.TrimSpace(text)
	if s == "" || s[0] == '#' {
		return "", "", false, nil
	}
	if s[0] == '[' {
		return "", "", false, fmt.Errorf("tables are not supported; write flat name = value lines")
	}
	eq := strings.IndexByte(s, '=')
	if eq <= 0 {
		return "", "", false, fmt.Errorf("want name = value")
	}
	name = strings.TrimSpace(s[:eq])
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", "", false, fmt.Errorf("name %q: only letters, digits, '-' and '_'", name)
		}
	}
	rest := strings.TrimSpace(s[eq+1:])
	switch {
	case rest == "":
		return "", "", false, fmt.Errorf("%s: missing value", name)
	case rest[0] == '"':
		v, tail, err := basicString(rest)
		if err != nil {
			return "", "", false, fmt.Errorf("%s: %w", name, err)
		}
		return name, v, true, trailing(tail)
	case rest[0] == '\'':
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return "", "", false, fmt.Errorf("%s: unterminated literal string", name)
		}
		return name, rest[1 : end+1], true, trailing(rest[end+2:])
	case rest[0] == '[' || rest[0] == '{':
		return "", "", false, fmt.Errorf("%s: arrays and inline tables are not supported; use a comma-separated string", name)
	}
	v := rest
	if i := strings.IndexByte(v, '#'); i >= 0 {
		v = strings.TrimSpace(v[:i])
	}
	switch {
	case v == "true" || v == "false":
	default:
		if _, err := strconv.ParseFloat(strings.ReplaceAll(v, "_", ""), 64); err != nil {
			return "", "", false, fmt.Errorf("%s: %q is not a string, number or boolean (quote strings)", name, v)
		}
		v = strings.ReplaceAll(v, "_", "")
	}
	return name, v, true, nil
}

func trailing(tail string) error {
	tail = strings.TrimSpace(tail)
	if tail != "" && tail[0] != '#' {
		return fmt.Errorf("unexpected %q after the value", tail)
	}
	return nil
}

// basicString parses a TOML basic string at the start of s.
func basicString(s string) (value, tail string, err error) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			return b.String(), s[i+1:], nil
		case '\\':
			if i+1 >= len(s) {
				return "", "", fmt.Errorf("unterminated string")
			}
			i++
			switch s[i] {
			case '"', '\\':
				b.WriteByte(s[i])
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return "", "", fmt.Errorf("unsupported escape \\%c", s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", "", fmt.Errorf("unterminated string")
}
