// Package setting declares each setting of a configuration once: the field it sets,
// its name (the flag's, the configuration file's key and, upper-cased, the environment
// variable's suffix: internal/flagconf), its help and the range of its values. Its
// default is the field's value when the declaration is made, which the configuration's
// New function sets, so it is written nowhere else.
//
// A Set registers its settings on a flag set (in package main only), checks values
// against their ranges — the same check for a command line and for a Config a library
// is given — and names a setting from its field's address, so that a library's message
// names the flag an operator types without writing the name a second time:
//
//	s := setting.New(setting.Float(&c.Epsilon, "epsilon", setting.Positive, "ε of …"))
//	s.Flag(&c.Epsilon) // "--epsilon"
package setting

import (
	"flag"
	"fmt"
	"reflect"
	"time"
)

// Setting is one declared setting.
type Setting struct {
	Name, Help string
	// Value is the field as a flag: setting it sets the field.
	Value flag.Value
	field any          // the field's address
	check func() error // the field's value against the range; nil: any value
	zero  func() bool  // the field holds its type's zero value
}

// Field is the address of the field s sets.
func (s Setting) Field() any { return s.field }

// Ranged says whether s has a range.
func (s Setting) Ranged() bool { return s.check != nil }

// Var declares the setting of field p read by v, a flag.Value over *p, with range r
// (nil: any value).
func Var[T any](p *T, v flag.Value, name string, r Rule[T], help string) Setting {
	s := Setting{Name: name, Help: help, Value: v, field: p, zero: func() bool { return reflect.ValueOf(p).Elem().IsZero() }}
	if r != nil {
		s.check = func() error { return r(*p) }
	}
	return s
}

// std declares p as the flag package's own value for T, made by define, so that -h
// prints its type and default as the flag package does.
func std[T any](p *T, name string, r Rule[T], help string, define func(fs *flag.FlagSet)) Setting {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	define(fs)
	return Var(p, fs.Lookup(name).Value, name, r, help)
}

// Float declares a float64 setting.
func Float(p *float64, name string, r Rule[float64], help string) Setting {
	return std(p, name, r, help, func(fs *flag.FlagSet) { fs.Float64Var(p, name, *p, help) })
}

// Int declares an int setting.
func Int(p *int, name string, r Rule[int], help string) Setting {
	return std(p, name, r, help, func(fs *flag.FlagSet) { fs.IntVar(p, name, *p, help) })
}

// Uint64 declares a uint64 setting.
func Uint64(p *uint64, name string, help string) Setting {
	return std(p, name, nil, help, func(fs *flag.FlagSet) { fs.Uint64Var(p, name, *p, help) })
}

// Duration declares a time.Duration setting.
func Duration(p *time.Duration, name string, r Rule[time.Duration], help string) Setting {
	return std(p, name, r, help, func(fs *flag.FlagSet) { fs.DurationVar(p, name, *p, help) })
}

// String declares a string setting.
func String(p *string, name string, help string) Setting {
	return std(p, name, nil, help, func(fs *flag.FlagSet) { fs.StringVar(p, name, *p, help) })
}

// Bool declares a boolean setting.
func Bool(p *bool, name string, help string) Setting {
	return std(p, name, nil, help, func(fs *flag.FlagSet) { fs.BoolVar(p, name, *p, help) })
}

// Named declares the name of field p for a setting the command binds itself (one it
// parses together with others, such as a list or a schema): Register skips it; Name and
// Flag find it.
func Named(p any, name string) Setting { return Setting{Name: name, field: p} }

// Set is the declared settings of a configuration.
type Set struct {
	all   []Setting
	names map[any]string
}

// New returns the set of settings s. Two settings of one name or one field are a
// programming error, and panic.
func New(s ...Setting) *Set {
	return (&Set{names: map[any]string{}}).With(s...)
}

// With returns the set of s's settings and more.
func (s *Set) With(more ...Setting) *Set {
	out := &Set{all: append(s.all[:len(s.all):len(s.all)], more...), names: map[any]string{}}
	seen := map[string]bool{}
	for _, x := range out.all {
		if _, dup := out.names[x.field]; dup || seen[x.Name] {
			panic(fmt.Sprintf("setting: %s declared twice", x.Name))
		}
		seen[x.Name], out.names[x.field] = true, x.Name
	}
	return out
}

// All returns the settings in the order of their declaration.
func (s *Set) All() []Setting { return s.all }

// Register defines a flag on fs for every setting.
func (s *Set) Register(fs *flag.FlagSet) {
	for _, x := range s.all {
		if x.Value != nil {
			fs.Var(x.Value, x.Name, x.Help)
		}
	}
}

// Name is the name of the setting of field (its address); a field not declared is a
// programming error, and panics.
func (s *Set) Name(field any) string {
	name, ok := s.names[field]
	if !ok {
		panic(fmt.Sprintf("setting: no setting of the field %T %p", field, field))
	}
	return name
}

// Flag is the setting of field as its flag is written: "--" + Name.
func (s *Set) Flag(field any) string { return "--" + s.Name(field) }

// Error is a value refused by its setting's range: "--name VALUE: why".
type Error struct {
	Name, Value string
	Err         error
}

func (e *Error) Error() string { return "--" + e.Name + " " + e.Value + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Check checks every setting whose field is not its zero value against its range (a
// library's Config, where zero means "unset: take the default"), and returns the first
// refusal, an *Error.
func (s *Set) Check() error {
	for _, x := range s.all {
		if x.check != nil && !x.zero() {
			if err := x.check(); err != nil {
				return &Error{Name: x.Name, Value: x.Value.String(), Err: err}
			}
		}
	}
	return nil
}

// CheckFlags checks every setting whose flag fs set — on the command line, from the
// environment or a configuration file — against its range, zero included: an explicit
// 0 is refused where the range does not hold it, never taken for "unset". The refusal
// reads "--name VALUE: why (run 'COMMAND -h' for its flags)".
func (s *Set) CheckFlags(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		name, ok := s.Lookup(f.Name)
		if err != nil || !ok || name.check == nil {
			return
		}
		if e := name.check(); e != nil {
			err = fmt.Errorf("%w (run '%s -h' for its flags)", &Error{Name: f.Name, Value: f.Value.String(), Err: e}, fs.Name())
		}
	})
	return err
}

// Lookup is the setting of that name.
func (s *Set) Lookup(name string) (Setting, bool) {
	for _, x := range s.all {
		if x.Name == name {
			return x, true
		}
	}
	return Setting{}, false
}

// Text is how values of T are written: Parse reads one, Format writes one. A Text
// type holds no state; -h shows no default for a setting whose default formats as
// T's zero value does.
type Text[T any] interface {
	Parse(string) (T, error)
	Format(T) string
}

// Parsed declares a setting of type T written as X says.
func Parsed[X Text[T], T any](p *T, name string, r Rule[T], help string) Setting {
	return Var(p, textValue[T, X]{p}, name, r, help)
}

type textValue[T any, X Text[T]] struct{ p *T }

func (v textValue[T, X]) String() string {
	var x X
	if v.p == nil { // the flag package's zero value, for its default check
		var zero T
		return x.Format(zero)
	}
	return x.Format(*v.p)
}

func (v textValue[T, X]) Set(s string) error {
	var x X
	t, err := x.Parse(s)
	if err != nil {
		return err
	}
	*v.p = t
	return nil
}
