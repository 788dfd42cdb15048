package main

import (
	"flag"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/pkg/config"
)

// defaultText is v as package flag prints a default (flag.Value.String).
func defaultText(v reflect.Value) (string, bool) {
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String(), true
	}
	switch v.Kind() {
	case reflect.String:
		return v.String(), true
	case reflect.Bool:
		return strconv.FormatBool(v.Bool()), true
	case reflect.Int, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10), true
	case reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10), true
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64), true
	}
	return "", false
}

// TestFlagDefaultsAreNewConfig: every setting has one default, config.NewConfig's; the
// serve flag that sets it (declared by config.Config.Bind) states the same one.
func TestFlagDefaultsAreNewConfig(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	d := reflect.ValueOf(config.NewConfig())
	compared := 0
	for fl, path := range settingPaths(t) {
		v := d
		for _, name := range strings.Split(path, ".") {
			v = v.FieldByName(name)
		}
		want, ok := defaultText(v)
		f := fs.Lookup(fl)
		if !ok || f == nil {
			continue // a value of its own type (bytes, a schema), or no flag: TestConfigFlags
		}
		compared++
		if f.DefValue != want {
			t.Errorf("-%s: flag default %q, config.NewConfig().%s = %s", fl, f.DefValue, path, want)
		}
	}
	if compared < 40 {
		t.Fatalf("compared %d flag defaults with config.NewConfig: the check would pass nearly vacuously", compared)
	}
	// The limits are set (not left to a zero the library replaces).
	if c := config.NewConfig(); c.MaxQueryIndices == 0 || c.MaxProjectionDim == 0 || c.Evaluation.Timeout == 0 || c.ShutdownTimeout == 0 {
		t.Errorf("config.NewConfig() leaves a limit unset: %s", fmt.Sprint(c.MaxQueryIndices, c.MaxProjectionDim, c.Evaluation.Timeout, c.ShutdownTimeout))
	}
}
