package projection_test

import (
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
	"github.com/privbo/privbo/pkg/dp/dptest"
)

// auditCases are the scalings the audit covers: every scaling that claims the
// guarantee, and the data-dependent one that does not.
func auditCases(t *testing.T) []auditCase {
	parse := func(t *testing.T, csv string) *dataset.Raw {
		t.Helper()
		raw, err := dataset.ParseRaw(strings.NewReader(csv), "audit", dataset.Options{Target: "progression"})
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	scale := func(t *testing.T, raw *dataset.Raw, sc dataset.Scaling) *dataset.Dataset {
		t.Helper()
		ds, err := raw.Scale(sc)
		if err != nil {
			t.Fatal(err)
		}
		return ds
	}
	load := func(spec string) func(*testing.T, string) *dataset.Dataset {
		return func(t *testing.T, csv string) *dataset.Dataset {
			t.Helper()
			sc, err := dataset.ParseScaling(spec)
			if err != nil {
				t.Fatal(err)
			}
			return scale(t, parse(t, csv), sc)
		}
	}
	// The private scaling's bounds are a release of their own (ε-DP under
	// replacing a record, charged separately); given them, the projection must
	// keep its guarantee. They are estimated once, from the original data, with a
	// large ε so that they are informative, and applied to both neighbours.
	var privateScaling *dataset.Scaling
	loadPrivate := func(t *testing.T, csv string) *dataset.Dataset {
		t.Helper()
		raw := parse(t, csv)
		if privateScaling == nil {
			sc, err := dataset.ParseScaling("private:200")
			if err != nil {
				t.Fatal(err)
			}
			est, err := raw.EstimateScaling(sc, 0, dptest.Source(7))
			if err != nil {
				t.Fatal(err)
			}
			privateScaling = &est
		}
		return scale(t, raw, *privateScaling)
	}
	perUnit := func(ds *dataset.Dataset, j int) float64 { return ds.Scale[j] }
	return []auditCase{
		{name: "schema", private: true, perUnit: perUnit, load: load("schema:../../examples/data/diabetes.schema.csv")},
		{name: "private", private: true, perUnit: perUnit, load: loadPrivate},
		{name: "fixed", private: true, perUnit: perUnit,
			load: load("fixed:age=10,sex=1,bmi=4,bp=10,s1=30,s2=30,s3=10,s4=1,s5=0.5,s6=10")},
		{name: "standardise-nonprivate", private: false, perUnit: perUnit, load: load("standardise-nonprivate")},
	}
}
