package charts_test

import (
	"slices"
	"testing"

	"github.com/anvil/anvil/config/crd"
)

// The chart carries every CRD the operator serves, so a first `helm
// install` needs no separate apply, and it renders them only when asked
// (--include-crds), as Helm installs crds/ apart from the templates.
func TestOperatorChartInstallsTheCRDs(t *testing.T) {
	defs, err := crd.Definitions()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range defs {
		want = append(want, d.Name)
	}
	slices.Sort(want)

	var got []string
	for _, o := range renderOperator(t, "--include-crds").ofKind("CustomResourceDefinition") {
		got = append(got, o.GetName())
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the chart's CRDs are %v, want Anvil's %v", got, want)
	}
	if n := len(renderOperator(t).ofKind("CustomResourceDefinition")); n != 0 {
		t.Errorf("the templates render %d CRDs themselves; they belong in crds/", n)
	}
}
