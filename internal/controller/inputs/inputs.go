// Package inputs reads the values a reconciler takes from user Secrets. A
// missing Secret or key is a *MissingError, which names the spec field,
// the Secret and the key, and never a value, so that every controller can
// report it as a wait under its own reason.
package inputs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MissingError says which input Secret or key is missing or empty.
type MissingError struct {
	Field, Namespace, Name, Key string
	// SecretMissing is set when the Secret itself does not exist.
	SecretMissing bool
}

func (e *MissingError) Error() string {
	if e.SecretMissing {
		return fmt.Sprintf("%s: Secret %s/%s does not exist", e.Field, e.Namespace, e.Name)
	}
	return fmt.Sprintf("%s: Secret %s/%s has no non-empty key %q", e.Field, e.Namespace, e.Name, e.Key)
}

// ReadKey returns the non-empty value of key in Secret namespace/name, or
// a *MissingError naming field. A failed read is wrapped with the field and
// the Secret's name.
func ReadKey(ctx context.Context, reader client.Reader, namespace, field, name, key string) (string, error) {
	s := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &MissingError{Field: field, Namespace: namespace, Name: name, Key: key, SecretMissing: true}
		}
		return "", fmt.Errorf("%s: reading Secret %s/%s: %w", field, namespace, name, err)
	}
	v := s.Data[key]
	if len(v) == 0 {
		return "", &MissingError{Field: field, Namespace: namespace, Name: name, Key: key}
	}
	return string(v), nil
}
