package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// TestServeSections: serve -h lists every flag once, under its section.
func TestServeSections(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	(&serveFlags{}).register(fs)
	seen := map[string]string{}
	for _, s := range serveSections {
		for _, name := range s.flags {
			if fs.Lookup(name) == nil {
				t.Errorf("section %s lists -%s, which serve does not have", s.title, name)
			}
			if prev, ok := seen[name]; ok {
				t.Errorf("-%s is in sections %s and %s", name, prev, s.title)
			}
			seen[name] = s.title
		}
	}
	fs.VisitAll(func(f *flag.Flag) {
		if _, ok := seen[f.Name]; !ok {
			t.Errorf("-%s is in no section of serve -h", f.Name)
		}
	})
	var out bytes.Buffer
	fs.SetOutput(&out)
	groupedUsage(fs, serveSections)()
	text := out.String()
	last := -1
	for _, s := range serveSections {
		i := strings.Index(text, "\n"+s.title+":\n")
		if i < 0 || i < last {
			t.Errorf("serve -h: section %q missing or out of order", s.title)
		}
		last = i
	}
	if !strings.Contains(text, "  -max-query-indices int\n    \tmaximum indices in one query (default 10000)") {
		t.Errorf("serve -h does not print -max-query-indices as the flag package does:\n%s", text)
	}
}
