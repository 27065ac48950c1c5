package perf

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// Namespace is where every measured object lives, on every cluster.
const Namespace = testenv.WorkloadNamespace

// Made-up credentials of the measured ControlPlanes: nothing dials the
// addresses they name, since kwok runs the Nova's pods.
const (
	benchBusURL    = "rabbit://nova:bench-bus-secret@rabbit.openstack.svc:5671/nova"
	benchRemoteURL = "rabbit://nova:bench-remote-secret@rabbit.bench.invalid:5671/nova"
	benchCA        = "-----BEGIN CERTIFICATE-----\nMIIBbench\n-----END CERTIFICATE-----\n"
	benchDBPass    = "bench-db-secret"
)

// createControlPlane creates a ControlPlane with remote computes, its
// inputs, and the service password initial.
func (s *Stack) createControlPlane(ctx context.Context, name, password string) error {
	mgmt := testenv.ManagementClusterName
	for secret, data := range map[string]map[string]string{
		name + "-bus":              {"transport_url": benchBusURL},
		name + "-bus-ca":           {"ca.crt": benchCA},
		name + "-nova-password":    {"password": password},
		name + "-remote-transport": {"transport_url": benchRemoteURL},
		name + "-db":               {"username": "nova", "password": benchDBPass},
	} {
		if err := s.PutSecret(ctx, mgmt, Namespace, secret, data); err != nil {
			return err
		}
	}
	cp := buildControlPlane(name, benchEndpoints(
		&c5c3v1alpha1.KeystoneSpec{InternalEndpoint: "http://keystone.openstack.svc:5000/v3", PublicEndpoint: "https://keystone.bench.invalid/v3", Region: "RegionOne"},
		"mariadb.openstack.svc", 0))
	return s.Env.Management.Client.Create(ctx, cp)
}

// createPool creates a NovaCompute of a ControlPlane's Nova on a compute
// cluster. Its node selector matches no node: the ControlPlane needs only
// the object to deliver the contract there.
func (s *Stack) createPool(ctx context.Context, cp, name, cluster string) error {
	p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace}}
	p.Spec.NovaRef.Name = cp + c5c3v1alpha1.NovaSuffix
	p.Spec.NodeSelector = map[string]string{"openstack.c5c3.io/nova-compute-pool": name}
	p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	return s.Env.Management.Client.Create(ctx, p)
}
