package config

import (
	"fmt"
	"maps"
	"reflect"
	"strings"
	"sync"
)

// FlagName is the name the flag tag of Config gives the setting at path, a field path
// below Config as the server's messages write it after "Config." ("Listen",
// "Output.Epsilon", "Jobs.Kusner.A"): "listen", "output-epsilon", "kusner-a". It
// reports false for a path no tag names, such as a setting without a flag
// (Config.Logger) or not a field at all.
func FlagName(path string) (string, bool) {
	name, ok := flagNames()[path]
	return name, ok
}

// FlagNames maps every path a flag tag of Config names to its flag, as FlagName does;
// the map is the caller's.
func FlagNames() map[string]string { return maps.Clone(flagNames()) }

// flagNames walks Config's type once. A malformed tag is a programming error, found
// by the package's tests, and panics.
var flagNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	walkFlagTags(reflect.TypeFor[Config](), "", names)
	return names
})

// walkFlagTags adds to names the flags of the fields of struct type t, whose path
// below Config is prefix. A field of this package's struct types is walked in turn; a
// field of another package's struct type, which cannot carry this package's tags,
// names the flags of the fields below it in its own tag, as "Sub.Path=name".
func walkFlagTags(t reflect.Type, prefix string, names map[string]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		path := prefix + f.Name
		if tag, ok := f.Tag.Lookup("flag"); ok {
			for entry := range strings.SplitSeq(tag, ",") {
				sub, name, below := strings.Cut(entry, "=")
				p := path
				if below {
					if !fieldPathExists(f.Type, sub) {
						panic(fmt.Sprintf("server: the flag tag of Config.%s names %s, not a field of %s", path, sub, f.Type))
					}
					p += "." + sub
				} else {
					name = sub
				}
				if !validFlagName(name) {
					panic(fmt.Sprintf("server: the flag tag of Config.%s gives %q, not a flag name (lower-case words joined by '-')", path, name))
				}
				if _, dup := names[p]; dup {
					panic(fmt.Sprintf("server: Config.%s has two flags in its tags", p))
				}
				names[p] = name
			}
		}
		if f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath() {
			walkFlagTags(f.Type, path+".", names)
		}
	}
}

// fieldPathExists says whether "A.B" is a path of exported fields below struct type t.
func fieldPathExists(t reflect.Type, path string) bool {
	for name := range strings.SplitSeq(path, ".") {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return false
		}
		f, ok := t.FieldByName(name)
		if !ok || !f.IsExported() {
			return false
		}
		t = f.Type
	}
	return true
}

// validFlagName says whether s is lower-case words of letters and digits joined by
// '-', the names of cmd/curator's flags.
func validFlagName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for word := range strings.SplitSeq(s, "-") {
		if word == "" {
			return false
		}
		for _, c := range word {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}
