package setting_test

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/privbo/privbo/internal/setting"
)

type config struct {
	Epsilon float64
	Every   int
	Lease   time.Duration
}

func (c *config) bind() *setting.Set {
	return setting.New(
		setting.Float(&c.Epsilon, "epsilon", setting.Positive, "ε of each release"),
		setting.Int(&c.Every, "every", setting.AtLeast(0), "refit every K (0: never)"),
		setting.Duration(&c.Lease, "lease", setting.DurationAtLeast(time.Second, "renewed every third of it"), "job lease"),
	)
}

// A library names a setting from its field, and checks a Config as the command line
// does, taking a zero field for unset.
func Example() {
	c := config{Epsilon: -1, Lease: time.Second}
	s := c.bind()
	fmt.Println(s.Flag(&c.Epsilon))
	fmt.Println(s.Check())
	c.Epsilon = 0 // unset: the default
	fmt.Println(s.Check())
	// Output:
	// --epsilon
	// --epsilon -1: must be positive and finite
	// <nil>
}

// TestCheckFlags: a flag given is checked, an explicit 0 included, and the default is
// the field's value when the set is declared.
func TestCheckFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string // "" for no refusal
	}{
		{nil, ""},
		{[]string{"--epsilon", "2"}, ""},
		{[]string{"--epsilon", "0"}, "--epsilon 0: must be positive and finite (run 'cmd -h' for its flags)"},
		{[]string{"--every", "0"}, ""},
		{[]string{"--every", "-1"}, "--every -1: must be ≥ 0"},
		{[]string{"--lease", "10ms"}, "--lease 10ms: must be at least 1s: renewed every third of it"},
	}
	for _, tt := range tests {
		c := config{Epsilon: 1, Lease: time.Minute}
		s := c.bind()
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		s.Register(fs)
		if d := fs.Lookup("epsilon").DefValue; d != "1" {
			t.Errorf("default of --epsilon = %q, want 1", d)
		}
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		err := s.CheckFlags(fs)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckFlags(%q) = %v, want nil", tt.args, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckFlags(%q) = %v, want %q", tt.args, err, tt.want)
		}
	}
}

// TestDeclaredTwice: two settings of one name are a programming error.
func TestDeclaredTwice(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("a name declared twice did not panic")
		}
	}()
	var a, b float64
	setting.New(setting.Float(&a, "x", nil, ""), setting.Float(&b, "x", nil, ""))
}
