package server

import (
	"reflect"
	"testing"
)

// TestFlagTags: Config's flag tags give each setting one flag and each flag one
// setting, below fields of this package's types and of others' alike.
func TestFlagTags(t *testing.T) {
	for _, tc := range []struct {
		path, flag string
		ok         bool
	}{
		{"Listen", "listen", true},
		{"Data.Scaling.Schema", "schema", true},    // two levels below another package's type
		{"Budget.Epsilon", "budget-epsilon", true}, // one type, several settings
		{"DatasetBudget.Epsilon", "dataset-budget-epsilon", true},
		{"Jobs.Kusner.A", "kusner-a", true}, // below this package's JobsConfig
		{"Ledger.CallTimeout", "ledger-timeout", true},
		{"TLS.KeyFile", "tls-key", true},
		{"Logger", "", false}, // a setting without a flag
		{"Budget", "", false}, // the parts have flags, not the whole
		{"Output.RangeEpsilon", "", false},
		{"Nothing.Here", "", false},
	} {
		if got, ok := FlagName(tc.path); got != tc.flag || ok != tc.ok {
			t.Errorf("FlagName(%q) = %q, %v, want %q, %v", tc.path, got, ok, tc.flag, tc.ok)
		}
	}
	names := FlagNames()
	if len(names) < 70 {
		t.Fatalf("FlagNames has %d settings, want the 70 or more cmd/curator's serve sets", len(names))
	}
	byFlag := map[string]string{}
	for path, flag := range names {
		if !validFlagName(flag) {
			t.Errorf("Config.%s: flag %q is not a flag name", path, flag)
		}
		if prev, ok := byFlag[flag]; ok {
			t.Errorf("flag %q names both Config.%s and Config.%s", flag, prev, path)
		}
		byFlag[flag] = path
		if !fieldPathExists(reflect.TypeFor[Config](), path) {
			t.Errorf("Config.%s: not a field path of Config", path)
		}
	}
	names["Listen"] = "changed"
	if got, _ := FlagName("Listen"); got != "listen" {
		t.Errorf("changing FlagNames' map changed FlagName(Listen) to %q", got)
	}
}

// TestFlagTagsRefuseMistakes: a tag naming a field that does not exist, a name that
// is no flag or two flags for one setting panic when the tags are first read.
func TestFlagTagsRefuseMistakes(t *testing.T) {
	type inner struct{ A, B int }
	for name, typ := range map[string]reflect.Type{
		"missing field": reflect.TypeFor[struct {
			X inner `flag:"A=x-a,C=x-c"`
		}](),
		"not a flag name": reflect.TypeFor[struct {
			X int `flag:"--x"`
		}](),
		"upper case": reflect.TypeFor[struct {
			X int `flag:"Xy"`
		}](),
		"empty word": reflect.TypeFor[struct {
			X int `flag:"x--y"`
		}](),
		"two flags": reflect.TypeFor[struct {
			X inner `flag:"A=x-a,A=x-b"`
		}](),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: walkFlagTags did not panic", name)
				}
			}()
			walkFlagTags(typ, "", map[string]string{})
		}()
	}
	got := map[string]string{}
	walkFlagTags(reflect.TypeFor[struct {
		X inner `flag:"A=x-a,B=x-b"`
		Y int   `flag:"y"`
		Z int
	}](), "", got)
	want := map[string]string{"X.A": "x-a", "X.B": "x-b", "Y": "y"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walkFlagTags = %v, want %v", got, want)
	}
}
