package targetcluster

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

func TestTrimForCache(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}
	tests := []struct {
		name            string
		in              any
		wantAnnotations map[string]string
	}{
		{name: "a Secret applied with kubectl", in: &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "s", ManagedFields: managed,
				Annotations: map[string]string{lastAppliedAnnotation: `{"data":{"password":"c2VjcmV0"}}`, "keep": "me"}},
			Data: map[string][]byte{"password": []byte("secret")},
		}, wantAnnotations: map[string]string{"keep": "me"}},
		{name: "metadata of a Node", in: &metav1.PartialObjectMetadata{
			ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: managed, Annotations: map[string]string{"traits": "CUSTOM_A"}},
		}, wantAnnotations: map[string]string{"traits": "CUSTOM_A"}},
		{name: "no annotations", in: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := trimForCache(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			o := out.(metav1.Object)
			if o.GetManagedFields() != nil {
				t.Error("managedFields kept")
			}
			if got := o.GetAnnotations(); len(got) != len(tt.wantAnnotations) || got["keep"] != tt.wantAnnotations["keep"] || got["traits"] != tt.wantAnnotations["traits"] {
				t.Errorf("annotations = %v, want %v", got, tt.wantAnnotations)
			}
		})
	}
	tomb := toolscache.DeletedFinalStateUnknown{Key: "ns/name"}
	if out, err := trimForCache(tomb); err != nil || out != tomb {
		t.Errorf("a tombstone = %v, %v; want it unchanged", out, err)
	}
}

func TestCacheOptionsTrimEveryNamespace(t *testing.T) {
	wide := cacheOptions(nil)
	if wide.DefaultTransform == nil || wide.DefaultNamespaces != nil {
		t.Errorf("cluster-wide options = %+v", wide)
	}
	scoped := cacheOptions([]string{"openstack", "ovn"})
	if len(scoped.DefaultNamespaces) != 2 {
		t.Fatalf("namespaces = %v", scoped.DefaultNamespaces)
	}
	for ns, c := range scoped.DefaultNamespaces {
		if c.Transform == nil {
			t.Errorf("namespace %s is cached untrimmed", ns)
		}
	}
}

func TestRemoteWatchesAreMetadataOnly(t *testing.T) {
	obj := metadataOnly(corev1.SchemeGroupVersion.WithKind("Secret"))
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok || m.Kind != "Secret" || m.APIVersion != "v1" {
		t.Errorf("metadataOnly = %#v", obj)
	}
}
