// Package crd embeds the generated CustomResourceDefinitions, so that the CLI
// and the test harness install exactly what controller-gen produced without
// depending on the working directory.
package crd

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

//go:embed bases/*.yaml standin/*.yaml
var bases embed.FS

// Definitions returns every Anvil CRD, sorted by name.
func Definitions() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("bases/*.yaml")
}

// StandIns returns the stand-ins of other projects' CRDs that tests and the
// devstack install on compute clusters: the hypervisor operator's
// Hypervisor.
func StandIns() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	return load("standin/*.yaml")
}

func load(pattern string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(bases, pattern)
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(files))
	for _, f := range files {
		raw, err := bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(raw, crd); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path.Base(f), err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
