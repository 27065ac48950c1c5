package webhook

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func validNova() *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{}
	n.Name = "controlplane-nova"
	n.Spec.KeystoneEndpoint = "http://keystone.openstack.svc:5000"
	n.Spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{}
	n.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{
		KeystoneEndpoint:      "https://keystone.example.com",
		TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: "remote-transport"},
	}
	return n
}

func TestValidateNova(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*novav1alpha1.Nova)
		wantField string
		wantMsg   string
	}{
		{name: "valid", mutate: func(*novav1alpha1.Nova) {}},
		{name: "valid without remoteCompute", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute, n.Spec.Messaging.TLS = nil, nil }},
		{name: "remoteCompute without TLS", mutate: func(n *novav1alpha1.Nova) { n.Spec.Messaging.TLS = nil },
			wantField: "spec.messaging.tls", wantMsg: "remoteCompute requires messaging.tls"},
		{name: "remote Keystone over http", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "http://keystone.example.com" },
			wantField: "spec.remoteCompute.keystoneEndpoint", wantMsg: "must use https"},
		{name: "remote Keystone without host", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "https://" },
			wantField: "spec.remoteCompute.keystoneEndpoint", wantMsg: "must name a host"},
		{name: "remote Keystone with a newline", mutate: func(n *novav1alpha1.Nova) {
			n.Spec.RemoteCompute.KeystoneEndpoint = "https://keystone.example.com\n[DEFAULT]"
		}, wantField: "spec.remoteCompute.keystoneEndpoint", wantMsg: "single line"},
		{name: "remote Keystone with credentials", mutate: func(n *novav1alpha1.Nova) {
			n.Spec.RemoteCompute.KeystoneEndpoint = "https://admin:hunter2@keystone.example.com"
		}, wantField: "spec.remoteCompute.keystoneEndpoint", wantMsg: "user name or password"},
		{name: "remote Keystone unparseable", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "https://[::1" },
			wantField: "spec.remoteCompute.keystoneEndpoint", wantMsg: "not a valid URL"},
		{name: "no transport Secret name", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.TransportURLSecretRef.Name = "" },
			wantField: "spec.remoteCompute.transportURLSecretRef.name", wantMsg: "must be named"},
		{name: "in-cluster Keystone without host", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "http://" },
			wantField: "spec.keystoneEndpoint", wantMsg: "must name a host"},
		{name: "public Keystone with ftp", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystonePublicEndpoint = "ftp://keystone" },
			wantField: "spec.keystonePublicEndpoint", wantMsg: "http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := validNova()
			tt.mutate(n)
			errs := ValidateNova(n)
			if tt.wantField == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			found := false
			for _, e := range errs {
				if e.Field == tt.wantField && strings.Contains(e.Error(), tt.wantMsg) {
					found = true
				}
				if strings.Contains(e.Error(), "hunter2") {
					t.Errorf("error echoes a password: %v", e)
				}
			}
			if !found {
				t.Errorf("errors %v do not reject %s with %q", errs, tt.wantField, tt.wantMsg)
			}
		})
	}
}

func TestKeystoneChanged(t *testing.T) {
	owner := func(name string) func(*novav1alpha1.Nova) {
		return func(n *novav1alpha1.Nova) {
			n.OwnerReferences = []metav1.OwnerReference{{APIVersion: "c5c3.io/v1alpha1", Kind: "ControlPlane", Name: name, UID: types.UID(name), Controller: ptr.To(true)}}
		}
	}
	tests := []struct {
		name   string
		old    func(*novav1alpha1.Nova)
		mutate func(*novav1alpha1.Nova)
		want   bool
	}{
		{name: "nothing", mutate: func(*novav1alpha1.Nova) {}},
		{name: "another field", mutate: func(n *novav1alpha1.Nova) { n.Spec.Region = "RegionTwo" }},
		{name: "keystoneEndpoint", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystoneEndpoint = "http://other" }, want: true},
		{name: "keystonePublicEndpoint", mutate: func(n *novav1alpha1.Nova) { n.Spec.KeystonePublicEndpoint = "https://other" }, want: true},
		{name: "remoteCompute.keystoneEndpoint", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute.KeystoneEndpoint = "https://other" }, want: true},
		{name: "remoteCompute removed", mutate: func(n *novav1alpha1.Nova) { n.Spec.RemoteCompute = nil }, want: true},
		{name: "a controller reference set", mutate: owner("cp"), want: true},
		{name: "a controller reference replaced", old: owner("cp"), mutate: owner("other"), want: true},
		{name: "a controller reference removed, as the garbage collector does", old: owner("cp"), mutate: func(n *novav1alpha1.Nova) { n.OwnerReferences = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validNova()
			if tt.old != nil {
				tt.old(old)
			}
			n := old.DeepCopy()
			tt.mutate(n)
			if got := keystoneChanged(old, n); got != tt.want {
				t.Errorf("keystoneChanged = %v, want %v", got, tt.want)
			}
		})
	}
}
