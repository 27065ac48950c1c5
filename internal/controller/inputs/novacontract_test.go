package inputs

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// secrets is a client.Reader of Secrets by name, enough for the key reads
// of this package; every other call is refused.
type secrets map[string]map[string]string

func (s secrets) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	data, ok := s[key.Name]
	if !ok {
		return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
	}
	secret := obj.(*corev1.Secret)
	secret.Data = map[string][]byte{}
	for k, v := range data {
		secret.Data[k] = []byte(v)
	}
	return nil
}

func (secrets) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

func novaFor(remote bool) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{}
	n.Name, n.Namespace = "cp-nova", "openstack"
	n.Spec.KeystoneEndpoint = "http://keystone.openstack.svc/v3"
	n.Spec.Messaging.SecretRef = novav1alpha1.TransportURLSecretRef{Name: "bus", Key: "transport_url"}
	n.Spec.ServiceUser.SecretRef.Name, n.Spec.ServiceUser.SecretRef.Key = "nova-password", "password"
	n.Spec.ServiceUser.Username, n.Spec.ServiceUser.ProjectName = "nova", "service"
	n.Spec.ServiceUser.UserDomainName, n.Spec.ServiceUser.ProjectDomainName = "Default", "Default"
	n.Spec.Metadata.SharedSecretRef.Name, n.Spec.Metadata.SharedSecretRef.Key = "metadata", "secret"
	if remote {
		n.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{KeystoneEndpoint: "https://keystone.example.com/v3",
			TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: "remote-bus", Key: "transport_url"}}
	}
	return n
}

func TestDeliveredNovaContract(t *testing.T) {
	const password = "bus-PASSWORD-1"
	complete := func() secrets {
		return secrets{
			"bus":           {"transport_url": "rabbit://nova:" + password + "@rabbit.openstack.svc:5672/"},
			"remote-bus":    {"transport_url": "rabbit://nova:" + password + "@rabbit.example.com:5671/"},
			"nova-password": {"password": "service-PASSWORD-2"},
			"metadata":      {"secret": "metadata-PASSWORD-3"},
		}
	}
	cases := []struct {
		name    string
		remote  bool
		change  func(secrets)
		missing bool
		invalid string
		host    string
	}{
		{name: "in-cluster", host: "rabbit.openstack.svc"},
		{name: "remote computes get the external listener", remote: true, host: "rabbit.example.com"},
		{name: "no bus Secret", change: func(s secrets) { delete(s, "bus") }, missing: true},
		{name: "no hand-over yet", remote: true, change: func(s secrets) { delete(s, "remote-bus") }, missing: true},
		{name: "a bus that is not rabbit", change: func(s secrets) { s["bus"]["transport_url"] = "amqp://nova:" + password + "@x/" },
			invalid: "spec.messaging.secretRef"},
		{name: "a hand-over that is not rabbit", remote: true, change: func(s secrets) { s["remote-bus"]["transport_url"] = "kafka://x/" },
			invalid: "spec.remoteCompute.transportURLSecretRef"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			reader := complete()
			if c.change != nil {
				c.change(reader)
			}
			data, err := DeliveredNovaContract(context.Background(), reader, novaFor(c.remote))
			var invalid *InvalidError
			switch {
			case c.missing:
				if !IsMissing(err) {
					t.Fatalf("error %v, want a MissingError", err)
				}
			case c.invalid != "":
				if !errors.As(err, &invalid) || invalid.Field != c.invalid || strings.Contains(err.Error(), password) {
					t.Fatalf("error %v, want an InvalidError naming %s and no password", err, c.invalid)
				}
			case err != nil:
				t.Fatal(err)
			case !strings.Contains(string(data["transport_url"]), c.host):
				t.Fatalf("the contract's transport URL names another host than %s", c.host)
			}
		})
	}
}

func TestNoVNCProxyBaseURL(t *testing.T) {
	nova := novaFor(false)
	nova.Name, nova.Namespace = "controlplane-nova", "openstack"
	if got, want := NoVNCProxyBaseURL(nova), "http://controlplane-nova-novncproxy.openstack.svc:6080/vnc_lite.html"; got != want {
		t.Errorf("without a hostname: %s, want %s", got, want)
	}
	nova.Spec.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Hostname: "console.example.com"}
	if got, want := NoVNCProxyBaseURL(nova), "https://console.example.com/vnc_lite.html"; got != want {
		t.Errorf("with a hostname: %s, want %s", got, want)
	}
}
