package projection_test

import (
	"strings"
	"testing"

	"github.com/privbo/privbo/pkg/dataset"
)

// auditCases are the scalings the audit covers.
func auditCases(t *testing.T) []auditCase {
	load := func(spec string) func(*testing.T, string) *dataset.Dataset {
		return func(t *testing.T, csv string) *dataset.Dataset {
			t.Helper()
			sc, err := dataset.ParseScaling(spec)
			if err != nil {
				t.Fatal(err)
			}
			ds, err := dataset.ParseCSV(strings.NewReader(csv), "audit", dataset.Options{Target: "progression", Scaling: sc})
			if err != nil {
				t.Fatal(err)
			}
			return ds
		}
	}
	perUnit := func(ds *dataset.Dataset, j int) float64 { return ds.Scale[j] }
	return []auditCase{
		{name: "fixed", private: true, perUnit: perUnit,
			load: load("fixed:age=10,sex=1,bmi=4,bp=10,s1=30,s2=30,s3=10,s4=1,s5=0.5,s6=10")},
		{name: "standardise-nonprivate", private: false, perUnit: perUnit, load: load("standardise")},
	}
}
