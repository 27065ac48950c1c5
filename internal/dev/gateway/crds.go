package gateway

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// gatewayAPIModule is the module whose standard-channel CRDs are installed.
// Its version is the one go.mod pins, so the CRDs always match the Go types.
const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// CRDs returns the standard-channel CRDs of the sigs.k8s.io/gateway-api
// module that go.mod pins (GatewayClass, Gateway, HTTPRoute, ReferenceGrant
// and the other standard kinds), read from config/crd/standard in the module
// cache.
//
// The YAML is not part of any Go package, so the module directory is found
// at run time with `go list -m`, run in this repository's checkout. That
// needs the go command and the module cache, which the devstack and the
// integration tests have; the module is downloaded when it is missing.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	dir, err := moduleDir()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(dir, "config", "crd", "standard", "*.yaml"))
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		got, err := decodeCRDs(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		crds = append(crds, got...)
	}
	if len(crds) == 0 {
		return nil, fmt.Errorf("no CRDs in %s/config/crd/standard", dir)
	}
	return crds, nil
}

// decodeCRDs returns the CustomResourceDefinitions of a multi-document YAML
// file. The standard directory also holds a ValidatingAdmissionPolicy, which
// is skipped: it only guards upgrades between channels.
func decodeCRDs(raw []byte) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var crds []*apiextensionsv1.CustomResourceDefinition
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return crds, nil
		}
		if err != nil {
			return nil, err
		}
		var meta kruntime.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, err
		}
		if meta.Kind != "CustomResourceDefinition" {
			continue
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return nil, err
		}
		crds = append(crds, crd)
	}
}

// moduleDir returns the directory of the gateway-api module in the module
// cache, downloading the module when the cache lacks it.
func moduleDir() (string, error) {
	dir, err := goCommand("list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
	if err != nil {
		return "", err
	}
	if dir != "" {
		return dir, nil
	}
	if _, err := goCommand("mod", "download", gatewayAPIModule); err != nil {
		return "", err
	}
	dir, err = goCommand("list", "-m", "-f", "{{.Dir}}", gatewayAPIModule)
	if err != nil {
		return "", err
	}
	if dir == "" {
		return "", fmt.Errorf("go list found no directory for %s even after go mod download", gatewayAPIModule)
	}
	return dir, nil
}

// goCommand runs the go command in this repository and returns its trimmed
// output. The repository is found from this file's compile-time path, so the
// caller's working directory does not matter; a binary built with -trimpath
// falls back to the working directory.
func goCommand(args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if _, err := os.Stat(file); err == nil {
			cmd.Dir = filepath.Dir(file)
		}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// InstallCRDs creates the CRDs of CRDs on the apiserver of cfg, keeping any
// that already exist as they are, and waits until every one is Established.
// Integration tests call it to give a test apiserver the Gateway API.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDs()
	if err != nil {
		return err
	}
	scheme := kruntime.NewScheme()
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	// A create is retried until the deadline. The test apiservers end a
	// request after 5 s (see testenv); under a whole test run's load the
	// large HTTPRoute CRD's create once ran past that, and the apiserver
	// reset its stream ("INTERNAL_ERROR; received from peer").
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		last = nil
		for _, crd := range crds {
			got := &apiextensionsv1.CustomResourceDefinition{}
			err := c.Get(ctx, client.ObjectKeyFromObject(crd), got)
			if apierrors.IsNotFound(err) {
				err = c.Create(ctx, crd.DeepCopy())
				if err == nil || apierrors.IsAlreadyExists(err) {
					return false, nil
				}
			}
			if err != nil {
				last = fmt.Errorf("CRD %s: %w", crd.Name, err)
				return false, nil
			}
			if !established(got) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("installing the Gateway API CRDs: %w", last)
	}
	return err
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
