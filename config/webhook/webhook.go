// Package webhook embeds the generated admission webhook configuration, so
// that the test harness registers exactly what controller-gen produced.
package webhook

import (
	_ "embed"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/yaml"
)

//go:embed manifests.yaml
var manifests []byte

// Validating returns the validating webhook configurations.
func Validating() ([]*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := yaml.UnmarshalStrict(trimDocumentStart(manifests), cfg); err != nil {
		return nil, fmt.Errorf("decoding the webhook manifests: %w", err)
	}
	return []*admissionregistrationv1.ValidatingWebhookConfiguration{cfg}, nil
}

// trimDocumentStart drops a leading "---" line, which a single-document
// decoder does not expect.
func trimDocumentStart(b []byte) []byte {
	if len(b) >= 4 && string(b[:4]) == "---\n" {
		return b[4:]
	}
	return b
}
