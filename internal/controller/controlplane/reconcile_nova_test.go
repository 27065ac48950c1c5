package controlplane

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// minimalControlPlane is the least a ControlPlane with Nova declares.
func minimalControlPlane() *c5c3v1alpha1.ControlPlane {
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: "cp", Namespace: "openstack"}}
	cp.Spec.Infrastructure.Messaging = &c5c3v1alpha1.MessagingSpec{SecretRef: c5c3v1alpha1.SecretKeyRef{Name: "bus"}}
	cp.Spec.Services.Keystone = &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://keystone.openstack.svc:5000/v3"}
	cp.Spec.Services.Nova = &c5c3v1alpha1.NovaServiceSpec{
		OpenStackRelease:     "2026.1",
		Image:                anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/nova", Tag: "2026.1"},
		ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "nova-password"},
	}
	return cp
}

func TestBuildNovaSpecDatabases(t *testing.T) {
	tests := []struct {
		name          string
		api, cell     *c5c3v1alpha1.DatabaseSpec
		wantAPI, want *novav1alpha1.DatabaseSpec
	}{
		{name: "none"},
		{
			name:    "both, declared ports",
			api:     &c5c3v1alpha1.DatabaseSpec{Host: "db.example.com", Port: 13306, Database: "nova_api", SecretName: "nova-db"},
			cell:    &c5c3v1alpha1.DatabaseSpec{Host: "cell.example.com", Port: 3307, Database: "nova", SecretName: "cell-db"},
			wantAPI: &novav1alpha1.DatabaseSpec{Host: "db.example.com", Port: 13306, Database: "nova_api", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}},
			want:    &novav1alpha1.DatabaseSpec{Host: "cell.example.com", Port: 3307, Database: "nova", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "cell-db"}},
		},
		{
			name:    "zero port defaults to 3306",
			api:     &c5c3v1alpha1.DatabaseSpec{Host: "10.0.0.5", Database: "nova_api", SecretName: "nova-db"},
			cell:    &c5c3v1alpha1.DatabaseSpec{Host: "10.0.0.5", Database: "nova", SecretName: "nova-db"},
			wantAPI: &novav1alpha1.DatabaseSpec{Host: "10.0.0.5", Port: 3306, Database: "nova_api", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}},
			want:    &novav1alpha1.DatabaseSpec{Host: "10.0.0.5", Port: 3306, Database: "nova", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}},
		},
		{
			// The Nova reports the missing half; the projection copies
			// what is declared.
			name:    "only the API database",
			api:     &c5c3v1alpha1.DatabaseSpec{Host: "db", Port: 3306, Database: "nova_api", SecretName: "nova-db"},
			wantAPI: &novav1alpha1.DatabaseSpec{Host: "db", Port: 3306, Database: "nova_api", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "nova-db"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := minimalControlPlane()
			cp.Spec.Services.Nova.APIDatabase, cp.Spec.Services.Nova.Database = tt.api, tt.cell
			before := cp.DeepCopy()
			spec, err := BuildNovaSpec(cp)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(spec.APIDatabase, tt.wantAPI) {
				t.Errorf("apiDatabase = %+v, want %+v", spec.APIDatabase, tt.wantAPI)
			}
			if !equality.Semantic.DeepEqual(spec.Database, tt.want) {
				t.Errorf("database = %+v, want %+v", spec.Database, tt.want)
			}
			if !equality.Semantic.DeepEqual(cp, before) {
				t.Error("BuildNovaSpec changed the ControlPlane")
			}
		})
	}
}
