package neutronmetadataagent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/dev/kstatustest"
)

// GitOps health checks read the NeutronMetadataAgent through kstatus: Current when
// settled, InProgress while it waits, Failed on input no retry fixes.
func TestKstatusReadsEveryState(t *testing.T) {
	obj := &neutronv1alpha1.NeutronMetadataAgent{TypeMeta: metav1.TypeMeta{APIVersion: neutronv1alpha1.GroupVersion.String(), Kind: "NeutronMetadataAgent"}}
	kstatustest.Walk(t, obj, &obj.Status.CommonStatus, (&Reconciler{}).summary())
}
