package ovncentral

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// BuildSouthboundPolicy returns the NetworkPolicy {central}-sb that keeps
// the Southbound's listener without an RBAC role to the central's own
// northd and relay pods. Any certificate of the central's CA opens that
// listener, a chassis key included, so on a cluster whose network enforces
// policies it is the only thing between a hypervisor on the central's
// cluster and every tenant's rows (docs/design/ovn.md). The client port
// stays open to every source, as chassis, agents, the backup and
// neutron-server dial it through Services and node ports, and Raft only
// to the members.
func BuildSouthboundPolicy(c *ovnv1alpha1.OVNCentral) *networkingv1.NetworkPolicy {
	ports := func(p int32) []networkingv1.NetworkPolicyPort {
		return []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(p))}}
	}
	from := func(components ...string) []networkingv1.NetworkPolicyPeer {
		peers := make([]networkingv1.NetworkPolicyPeer, 0, len(components))
		for _, comp := range components {
			peers = append(peers, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{MatchLabels: selector(c, comp)}})
		}
		return peers
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: Southbound.Name(c), Namespace: c.Namespace, Labels: labels(c, Southbound.Short)},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: selector(c, Southbound.Short)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{
				{Ports: ports(Southbound.Port)},
				{Ports: ports(Southbound.RaftPort), From: from(Southbound.Short)},
				{Ports: ports(Southbound.InternalPort), From: from(northdComponent, relayComponent)},
			},
		},
	}
}
