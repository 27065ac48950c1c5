package ovnchassis

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

func testChassis(cluster string) *ovnv1alpha1.OVNChassis {
	c := &ovnv1alpha1.OVNChassis{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-compute-chassis", Namespace: "openstack"}}
	c.Spec.CentralRef.Name = "controlplane-ovn"
	c.Spec.NodeSelector = map[string]string{ChassisNodeLabel: "true"}
	if cluster != "" {
		c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	}
	return c
}

// publishedCentral is a central on the management cluster that published
// everything and runs its image.
func publishedCentral() *ovnv1alpha1.OVNCentral {
	c := &ovnv1alpha1.OVNCentral{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-ovn", Namespace: "openstack"}}
	c.Status.Northbound.InternalDBAddress = "ssl:10.0.0.1:6641"
	c.Status.Southbound.InternalDBAddress = "ssl:10.0.0.2:6642"
	c.Status.ClientSecretName = "controlplane-ovn-client"
	c.Status.InstalledImage = c.ResolvedImage()
	return c
}

func external(c *ovnv1alpha1.OVNCentral) *ovnv1alpha1.OVNCentral {
	c.Spec.Northbound.ExternallyReachable, c.Spec.Southbound.ExternallyReachable = true, true
	c.Status.Northbound.DBAddress = "ssl:192.0.2.1:30641"
	c.Status.Southbound.DBAddress = "ssl:192.0.2.1:30651"
	return c
}

// placed puts a central on a compute cluster.
func placed(c *ovnv1alpha1.OVNCentral, cluster string) *ovnv1alpha1.OVNCentral {
	c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: cluster}
	return c
}

func TestDecideCentral(t *testing.T) {
	tests := []struct {
		name       string
		chassis    *ovnv1alpha1.OVNChassis
		central    func() *ovnv1alpha1.OVNCentral
		reason     string
		remote     string
		cross      bool
		msgHas     []string
		wantPolled bool
	}{
		{name: "same cluster uses the internal Southbound", chassis: testChassis(""), central: publishedCentral,
			reason: ovnv1alpha1.CentralResolvedReason, remote: "ssl:10.0.0.2:6642"},
		{name: "same cluster prefers the relay", chassis: testChassis(""), central: func() *ovnv1alpha1.OVNCentral {
			c := publishedCentral()
			c.Status.RelayAddress = "ssl:10.0.0.9:6642"
			return c
		}, reason: ovnv1alpha1.CentralResolvedReason, remote: "ssl:10.0.0.9:6642"},
		{name: "another cluster without external databases", chassis: testChassis("compute-a"), central: publishedCentral,
			reason: ovnv1alpha1.CentralNotExternallyReachableReason,
			msgHas: []string{"target cluster compute-a", "the management cluster", "spec.northbound.externallyReachable", "spec.southbound.externallyReachable"}},
		{name: "another cluster, only one database external", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			c := external(publishedCentral())
			c.Spec.Northbound.ExternallyReachable = false
			return c
		}, reason: ovnv1alpha1.CentralNotExternallyReachableReason},
		{name: "another cluster uses the node ports", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			return external(publishedCentral())
		}, reason: ovnv1alpha1.CentralResolvedReason, remote: "ssl:192.0.2.1:30651", cross: true},
		{name: "another cluster waits for the published address", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			c := external(publishedCentral())
			c.Status.Southbound.DBAddress = ""
			return c
		}, reason: ovnv1alpha1.CentralNotReadyReason, msgHas: []string{"outside its cluster"}, wantPolled: true},
		{name: "an external relay is waited for", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			c := external(publishedCentral())
			c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{ExternallyReachable: true}
			return c
		}, reason: ovnv1alpha1.CentralNotReadyReason, msgHas: []string{"relay's node address"}, wantPolled: true},
		{name: "an external relay is dialled", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			c := external(publishedCentral())
			c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{ExternallyReachable: true}
			c.Status.RelayDBAddress = "ssl:192.0.2.5:30661"
			return c
		}, reason: ovnv1alpha1.CentralResolvedReason, remote: "ssl:192.0.2.5:30661", cross: true},
		{name: "no client identity yet", chassis: testChassis(""), central: func() *ovnv1alpha1.OVNCentral {
			c := publishedCentral()
			c.Status.ClientSecretName = ""
			return c
		}, reason: ovnv1alpha1.CentralNotReadyReason, wantPolled: true},
		{name: "an upgrading central holds the chassis", chassis: testChassis(""), central: func() *ovnv1alpha1.OVNCentral {
			c := publishedCentral()
			c.Status.InstalledImage = "ghcr.io/c5c3/ovn:older"
			return c
		}, reason: ovnv1alpha1.CentralUpgradingReason, wantPolled: true},
		{name: "a central on the chassis's own compute cluster is refused", chassis: testChassis("compute-a"), central: func() *ovnv1alpha1.OVNCentral {
			return placed(external(publishedCentral()), "compute-a")
		}, reason: ovnv1alpha1.CentralPlacedElsewhereReason, msgHas: []string{"target cluster compute-a", "management cluster"}},
		{name: "a central on a compute cluster is refused to a local chassis", chassis: testChassis(""), central: func() *ovnv1alpha1.OVNCentral {
			return placed(external(publishedCentral()), "compute-b")
		}, reason: ovnv1alpha1.CentralPlacedElsewhereReason, msgHas: []string{"target cluster compute-b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := DecideCentral(tt.chassis, tt.central())
			if v.Reason != tt.reason {
				t.Fatalf("reason = %s (%s), want %s", v.Reason, v.Message, tt.reason)
			}
			if v.Addresses.Remote != tt.remote || v.Addresses.CrossCluster != tt.cross {
				t.Errorf("addresses = %+v", v.Addresses)
			}
			// Evacuation runs on the management cluster, whatever the
			// chassis's cluster: the Northbound is dialled there.
			if tt.reason == ovnv1alpha1.CentralResolvedReason &&
				(v.Addresses.NB != "ssl:10.0.0.1:6641" || v.Addresses.ClientSecret != "controlplane-ovn-client") {
				t.Errorf("evacuation dials %q with %q, want the internal Northbound and the central's own client Secret", v.Addresses.NB, v.Addresses.ClientSecret)
			}
			for _, s := range tt.msgHas {
				if !strings.Contains(v.Message, s) {
					t.Errorf("message %q lacks %q", v.Message, s)
				}
			}
			if (v.Requeue > 0) != tt.wantPolled {
				t.Errorf("requeue = %s", v.Requeue)
			}
		})
	}
}
