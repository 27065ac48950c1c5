package podrunner

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestComputeDriver(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
		wantErr     bool
	}{
		{name: "no annotations", want: FakeComputeDriver},
		{name: "other annotations only", annotations: map[string]string{"example.com/x": "y"}, want: FakeComputeDriver},
		{name: "empty value keeps the default", annotations: map[string]string{ComputeDriverAnnotation: " "}, want: FakeComputeDriver},
		{name: "build abort", annotations: map[string]string{ComputeDriverAnnotation: "fake.FakeBuildAbortDriver"}, want: "fake.FakeBuildAbortDriver"},
		{name: "reschedule, padded", annotations: map[string]string{ComputeDriverAnnotation: " fake.FakeRescheduleDriver\n"}, want: "fake.FakeRescheduleDriver"},
		{name: "a real driver is refused", annotations: map[string]string{ComputeDriverAnnotation: "libvirt.LibvirtDriver"}, wantErr: true},
		{name: "a nested module is refused", annotations: map[string]string{ComputeDriverAnnotation: "fake.sub.Driver"}, wantErr: true},
		{name: "a full module path is refused", annotations: map[string]string{ComputeDriverAnnotation: "nova.virt.fake.FakeDriver"}, wantErr: true},
		{name: "a line break cannot inject an option", annotations: map[string]string{ComputeDriverAnnotation: "fake.FakeDriver\nhost = other"}, wantErr: true},
		{name: "the bare module is refused", annotations: map[string]string{ComputeDriverAnnotation: "fake."}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ComputeDriver(tt.annotations)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), ComputeDriverAnnotation) {
				t.Errorf("error %q does not name the annotation", err)
			}
			if got != tt.want {
				t.Errorf("driver = %q, want %q", got, tt.want)
			}
		})
	}
}

// The node's annotation reaches nova-compute's generated configuration, and
// a refused one fails the build of the command, so the pod waits.
func TestNovaComputeDriverFromNode(t *testing.T) {
	spec := corev1.Container{Name: "nova-compute", Image: "quay.io/c5c3/nova:2026.1", Command: []string{"nova-compute"}}
	tests := []struct {
		name        string
		annotations map[string]string
		wantLine    string
		wantErr     bool
	}{
		{name: "default", wantLine: "compute_driver = fake.FakeDriver\n"},
		{name: "build abort", annotations: map[string]string{ComputeDriverAnnotation: "fake.FakeBuildAbortDriver"}, wantLine: "compute_driver = fake.FakeBuildAbortDriver\n"},
		{name: "refused", annotations: map[string]string{ComputeDriverAnnotation: "ironic.IronicDriver"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := novaFixture(t, spec)
			c.NodeAnnotations = tt.annotations
			cmd, err := NovaComputeMapping().Build(c)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if conf := string(cmd.Files[filepath.Join(c.WorkDir, OverridesFile)]); !strings.Contains(conf, tt.wantLine) {
				t.Errorf("overrides lack %q:\n%s", tt.wantLine, conf)
			}
		})
	}
}

// annotationSource serves a node's annotations, or fails.
type annotationSource struct {
	objectSource
	annotations map[string]string
	err         error
}

func (s annotationSource) NodeAnnotations(context.Context, string) (map[string]string, error) {
	return s.annotations, s.err
}

func TestPodRunNodeAnnotations(t *testing.T) {
	tests := []struct {
		name    string
		src     objectSource
		want    map[string]string
		wantErr bool
	}{
		{name: "a source without Nodes yields none", src: annotationSource{}.objectSource},
		{name: "the node's annotations", src: annotationSource{annotations: map[string]string{ComputeDriverAnnotation: "fake.FakeRescheduleDriver"}},
			want: map[string]string{ComputeDriverAnnotation: "fake.FakeRescheduleDriver"}},
		{name: "a read error fails the preparation", src: annotationSource{err: errors.New("forbidden")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &podRun{ctx: t.Context(), h: &nodeHandler{node: "hv-1", src: tt.src}}
			got, err := r.nodeAnnotations()
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if len(got) != len(tt.want) || got[ComputeDriverAnnotation] != tt.want[ComputeDriverAnnotation] {
				t.Errorf("annotations = %v, want %v", got, tt.want)
			}
		})
	}
}

// A runner's Node carries the annotations it was given, as a copy.
func TestNodeObjectAnnotations(t *testing.T) {
	in := map[string]string{ComputeDriverAnnotation: "fake.FakeBuildAbortDriver"}
	n := nodeObject(Node{Name: "hv-1", Annotations: in})
	if n.Annotations[ComputeDriverAnnotation] != "fake.FakeBuildAbortDriver" {
		t.Fatalf("annotations = %v", n.Annotations)
	}
	n.Annotations["x"] = "y"
	if _, ok := in["x"]; ok {
		t.Error("the Node shares the caller's map")
	}
}
