package operator

import (
	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/controller/conditions"
	hypervisorv1 "github.com/anvil/anvil/internal/hypervisor/v1"
)

// NewScheme returns a scheme that knows the built-in Kubernetes kinds and
// every Anvil kind. Clients of the management cluster and of compute clusters
// share it, so a typed object means the same thing wherever it is written.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(c5c3v1alpha1.AddToScheme(s))
	utilruntime.Must(novav1alpha1.AddToScheme(s))
	utilruntime.Must(ovnv1alpha1.AddToScheme(s))
	utilruntime.Must(neutronv1alpha1.AddToScheme(s))
	// The hypervisor operator's Hypervisor, whose custom traits pools write.
	utilruntime.Must(hypervisorv1.AddToScheme(s))
	// The Gateway API's HTTPRoute, which publishes the metadata API.
	utilruntime.Must(gatewayv1.Install(s))
	// cert-manager's Certificate, which issues the OVN central's TLS.
	utilruntime.Must(cmv1.AddToScheme(s))
	return s
}

// exportConditions points anvil_object_condition at every Anvil kind in
// mgr's cache, which the controllers already watch.
func exportConditions(mgr ctrl.Manager) {
	conditions.ExportFrom(mgr.GetCache(), mgr.GetScheme(),
		&c5c3v1alpha1.ControlPlaneList{}, &novav1alpha1.NovaList{}, &novav1alpha1.NovaComputeList{},
		&ovnv1alpha1.OVNCentralList{}, &ovnv1alpha1.OVNChassisList{}, &neutronv1alpha1.NeutronMetadataAgentList{})
}
