package main

import (
	"regexp"

	"github.com/privbo/privbo/pkg/config"
)

// configRef matches a setting named the server's way: Config followed by exported
// field names, after what is not part of a name ("curator.Config.X" is another
// package's Config). The first group is that character, the second the path.
var configRef = regexp.MustCompile(`(^|[^.\w])Config\.([A-Z][A-Za-z0-9]*(?:\.[A-Z][A-Za-z0-9]*)*)`)

// flagText rewrites the Config.<path> names in s as the serve flags that set them,
// named by config.Config's flag tags (config.FlagName); a path without a flag stays
// as it is.
func flagText(s string) string {
	return configRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := configRef.FindStringSubmatch(ref)
		if f, ok := config.FlagName(m[2]); ok {
			return m[1] + "--" + f
		}
		return ref
	})
}

// flagError is an error whose text names flags instead of Config fields; it unwraps
// to the original, so errors.Is and errors.As see through it.
type flagError struct {
	text string
	err  error
}

func (e *flagError) Error() string { return e.text }
func (e *flagError) Unwrap() error { return e.err }

// withFlagNames returns err with the settings it names rewritten as flags.
func withFlagNames(err error) error {
	if err == nil {
		return nil
	}
	text := err.Error()
	if t := flagText(text); t != text {
		return &flagError{text: t, err: err}
	}
	return err
}
