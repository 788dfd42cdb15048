package hparam

import (
	"strings"
	"testing"
)

// FuzzParseParam checks that ParseParam never panics, that its errors start
// with "hparam: ", and that every Param it accepts is valid and reads back
// identically from its String form.
func FuzzParseParam(f *testing.F) {
	for _, s := range []string{
		"lambda=log:1e-4:10:16", "lr=linear:0.1:1:10", "C=list:0.1,1,10", "C=loglist:1,2",
		"x=linear:1:1:1", "x=log:0:1:2", "x=list:1,1", "=", "a=b:c", "a=log:1:2:3:4",
		"x=linear:-1e308:1e308:5", "x=list:0x1p-3,1e-320",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		p, err := ParseParam(spec)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "hparam: ") {
				t.Errorf("ParseParam(%q) error %q does not start with %q", spec, err, "hparam: ")
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseParam(%q) = %v, which is invalid: %v", spec, p, err)
		}
		back, err := ParseParam(p.String())
		if err != nil || !equalParam(back, p) {
			t.Fatalf("ParseParam(%q) = %v, %v, want %v (round trip of %q)", p.String(), back, err, p, spec)
		}
		if _, err := NewSpace(p); err != nil {
			t.Fatalf("NewSpace(ParseParam(%q)) error: %v", spec, err)
		}
	})
}
