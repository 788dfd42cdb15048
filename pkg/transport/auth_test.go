package transport

import (
	"strings"
	"testing"
)

func TestParseTokens(t *testing.T) {
	good := "# comment\n\nalice " + HashToken("secret-token-alice") + "\nbob " + strings.ToUpper(HashToken("secret-token-bob")) + "\n"
	m, err := ParseTokens(strings.NewReader(good), "tokens")
	if err != nil {
		t.Fatal(err)
	}
	if m[HashToken("secret-token-alice")] != "alice" || m[HashToken("secret-token-bob")] != "bob" || len(m) != 2 {
		t.Errorf("ParseTokens = %v", m)
	}
	for _, tc := range []struct{ text, want string }{
		{"", "lists no tokens"},
		{"alice\n", ":1: want"},
		{"alice abc\n", "64 hex digits"},
		{"_curator " + HashToken("x") + "\n", "must not start with '_'"},
		{"a " + HashToken("x") + "\nb " + HashToken("x") + "\n", ":2: the same token hash"},
	} {
		if _, err := ParseTokens(strings.NewReader(tc.text), "tokens"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTokens(%q) error = %v, want %q", tc.text, err, tc.want)
		}
	}
}

func TestValidateIdentity(t *testing.T) {
	for id, ok := range map[string]bool{"vendor-a": true, "a@b.c": true, "x:y_z": true, "": false, "_curator": false,
		"has space": false, "é": false, strings.Repeat("a", 128): true, strings.Repeat("a", 129): false} {
		if err := ValidateIdentity(id); (err == nil) != ok {
			t.Errorf("ValidateIdentity(%q) = %v, want ok=%v", id, err, ok)
		}
	}
}

func FuzzParseTokens(f *testing.F) {
	f.Add("alice " + HashToken("t") + "\n# c\n")
	f.Add("x y z\n")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := ParseTokens(strings.NewReader(text), "f")
		if err != nil {
			return
		}
		for h, id := range m {
			if len(h) != 64 || ValidateIdentity(id) != nil {
				t.Fatalf("accepted %q → %q", h, id)
			}
		}
	})
}

func FuzzValidateIdentity(f *testing.F) {
	f.Add("vendor-a")
	f.Add("_x")
	f.Fuzz(func(t *testing.T, id string) {
		if ValidateIdentity(id) != nil {
			return
		}
		if id == "" || len(id) > 128 || id[0] == '_' || strings.ContainsAny(id, " \n\t\"'/\\") {
			t.Fatalf("accepted identity %q", id)
		}
	})
}
