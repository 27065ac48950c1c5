package controlplane

import (
	"bytes"
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// deliveredReader answers a read of a Secret the pass has just written
// with what it wrote, and sends every other read on. The cache learns of
// the pass's own writes only when their watch events come back, so a
// contract rendered from it could miss a change the same pass delivered,
// a new remote bus URL say, and the mirrors would take it one pass later.
type deliveredReader struct {
	client.Reader
	namespace string
	// secrets is the data written this pass, by Secret name.
	secrets map[string]map[string][]byte
}

// Get implements client.Reader.
func (d deliveredReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if s, ok := obj.(*corev1.Secret); ok && key.Namespace == d.namespace {
		if data, written := d.secrets[key.Name]; written {
			*s = corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace},
				Type:       corev1.SecretTypeOpaque,
				Data:       make(map[string][]byte, len(data)),
			}
			for k, v := range data {
				s.Data[k] = bytes.Clone(v)
			}
			return nil
		}
	}
	return d.Reader.Get(ctx, key, obj, opts...)
}
