package targetcluster

import "testing"

func TestBuildRegistrationSecret(t *testing.T) {
	tests := []struct {
		name           string
		namespaces     string
		wantNamespaces bool
	}{
		{name: "cluster-wide", namespaces: ""},
		{name: "scoped", namespaces: "openstack,ovn", wantNamespaces: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := BuildRegistrationSecret("compute-a", "c5c3-clusters", []byte("kc"), tt.namespaces)
			if s.Name != "compute-a" || s.Namespace != "c5c3-clusters" {
				t.Errorf("name/namespace = %s/%s", s.Namespace, s.Name)
			}
			if s.Labels[RegistrationLabel] != "true" {
				t.Errorf("label = %v", s.Labels)
			}
			if string(s.Data[KubeconfigKey]) != "kc" {
				t.Errorf("kubeconfig = %q", s.Data[KubeconfigKey])
			}
			got, ok := s.Data[NamespacesKey]
			if ok != tt.wantNamespaces || string(got) != tt.namespaces {
				t.Errorf("namespaces = %q (present %v)", got, ok)
			}
		})
	}
}
