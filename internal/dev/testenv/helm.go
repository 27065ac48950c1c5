package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RenderChart runs the pinned `helm template` on a chart of this repository
// (a path relative to the repository root) and returns the rendered objects.
func RenderChart(chart, release, namespace string, args ...string) ([]*unstructured.Unstructured, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	binDir, err := BinDir()
	if err != nil {
		return nil, err
	}
	argv := append([]string{"template", release, filepath.Join(root, chart), "--namespace", namespace}, args...)
	cmd := exec.Command(filepath.Join(binDir, "helm"), argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", chart, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(&stdout, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// Apply creates the objects on c in order, updating those that exist. It
// is for test fixtures such as a rendered chart.
func (c *Cluster) Apply(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		o = o.DeepCopy()
		err := c.Client.Create(ctx, o)
		if client.IgnoreAlreadyExists(err) == nil && err != nil {
			live := &unstructured.Unstructured{}
			live.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Client.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
				return err
			}
			o.SetResourceVersion(live.GetResourceVersion())
			err = c.Client.Update(ctx, o)
		}
		if err != nil {
			return fmt.Errorf("applying %s %s: %w", o.GetKind(), client.ObjectKeyFromObject(o), err)
		}
	}
	return nil
}
