package novadb

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// secretReader serves Secrets from a map, by name.
type secretReader map[string]*corev1.Secret

func (r secretReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	s, ok := r[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	s.DeepCopyInto(obj.(*corev1.Secret))
	return nil
}

func (r secretReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

func TestConfigForNova(t *testing.T) {
	const password = "cell-password-xyz"
	nova := func(db *novav1alpha1.DatabaseSpec) *novav1alpha1.Nova {
		n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Namespace: "openstack", Name: "nova"}}
		n.Spec.Database = db
		return n
	}
	spec := &novav1alpha1.DatabaseSpec{Host: "db.example", Database: "nova", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}}
	secret := func(data map[string]string) secretReader {
		s := &corev1.Secret{Data: map[string][]byte{}}
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return secretReader{"nova-db": s}
	}
	tests := []struct {
		name    string
		nova    *novav1alpha1.Nova
		reader  secretReader
		want    Config
		wantErr string
	}{
		{name: "no spec.database", nova: nova(nil), reader: secretReader{}, wantErr: "spec.database"},
		{name: "no Secret", nova: nova(spec), reader: secretReader{}, wantErr: "Secret openstack/nova-db"},
		{name: "no password key", nova: nova(spec), reader: secret(map[string]string{"username": "nova"}), wantErr: "lacks the key"},
		{
			name: "the default port fills a zero one", nova: nova(spec),
			reader: secret(map[string]string{"username": "nova", "password": password}),
			want: Config{Host: "db.example", Port: novav1alpha1.DefaultDatabasePort, Database: "nova",
				Username: "nova", Password: password, Timeout: DefaultTimeout},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ConfigForNova(t.Context(), tt.reader, tt.nova)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				// Printed without the password, as every message of the pool.
				t.Errorf("config %s@%s:%d/%s, want %s@%s:%d/%s (or the password differs)", got.Username, got.Host, got.Port, got.Database, tt.want.Username, tt.want.Host, tt.want.Port, tt.want.Database)
			}
		})
	}
}
