package novacompute

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden from the current BuildDaemonSet")

// daemonSetGoldenCases render whole DaemonSets, so that a change anywhere
// in the rendered object shows up as a diff of one file.
var daemonSetGoldenCases = []struct {
	name  string
	pool  func() *novav1alpha1.NovaCompute
	input DaemonSetInput
}{
	{
		name: "daemonset-live",
		pool: func() *novav1alpha1.NovaCompute {
			return dsPool(func(p *novav1alpha1.NovaCompute) {
				p.Spec.Tolerations = []corev1.Toleration{{
					Key: "node-role.kubernetes.io/compute", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
				}}
				p.Spec.Resources = &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
				}
				p.Spec.UpdateStrategy.MaxUnavailable = ptrIntOrString(intstr.FromString("25%"))
			})
		},
		input: dsInput(false,
			dsNode("n1", novav1alpha1.NodeActive),
			dsNode("n3", novav1alpha1.NodeConflict),
			dsNode("n2", novav1alpha1.NodeConflict),
			dsNode("n5", novav1alpha1.NodeDraining),
			dsNode("n4", novav1alpha1.NodeDraining),
		),
	},
	{
		name: "daemonset-deleting-ondelete",
		pool: func() *novav1alpha1.NovaCompute {
			return dsPool(func(p *novav1alpha1.NovaCompute) {
				p.Spec.UpdateStrategy.Type = novav1alpha1.OnDeleteStrategy
			})
		},
		input: dsInput(true,
			dsNode("n1", novav1alpha1.NodeActive),
			dsNode("n2", novav1alpha1.NodeDraining),
		),
	},
	{
		// A term of conflicts alone would select every other node.
		name: "daemonset-no-selector",
		pool: func() *novav1alpha1.NovaCompute {
			return dsPool(func(p *novav1alpha1.NovaCompute) { p.Spec.NodeSelector = nil })
		},
		input: dsInput(false,
			dsNode("n1", novav1alpha1.NodeConflict),
			dsNode("n2", novav1alpha1.NodeDraining),
		),
	},
	{
		name:  "daemonset-nothing-to-run",
		pool:  func() *novav1alpha1.NovaCompute { return dsPool(nil) },
		input: dsInput(true, dsNode("n1", novav1alpha1.NodeActive)),
	},
}

func ptrIntOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func daemonSetGoldenPath(name string) string { return filepath.Join("testdata", name+".golden") }

// TestBuildDaemonSetGolden pins the whole rendered DaemonSet of
// representative pools as YAML.
func TestBuildDaemonSetGolden(t *testing.T) {
	for _, gc := range daemonSetGoldenCases {
		t.Run(gc.name, func(t *testing.T) {
			got, err := yaml.Marshal(BuildDaemonSet(gc.pool(), gc.input))
			if err != nil {
				t.Fatal(err)
			}
			path := daemonSetGoldenPath(gc.name)
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./internal/controller/novacompute -run TestBuildDaemonSetGolden -update)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("DaemonSet differs from %s (rerun with -update after checking):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// TestNoStaleDaemonSetGoldens keeps testdata equal to the golden cases, so
// no file outlives the case that wrote it.
func TestNoStaleDaemonSetGoldens(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, gc := range daemonSetGoldenCases {
		want = append(want, daemonSetGoldenPath(gc.name))
	}
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("golden files = %v, want %v", files, want)
	}
}
