package ovnchassis

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/kstatustest"
)

// GitOps health checks read the OVNChassis through kstatus: Current when
// settled, InProgress while it waits, Failed on input no retry fixes.
func TestKstatusReadsEveryState(t *testing.T) {
	obj := &ovnv1alpha1.OVNChassis{TypeMeta: metav1.TypeMeta{APIVersion: ovnv1alpha1.GroupVersion.String(), Kind: "OVNChassis"}}
	kstatustest.Walk(t, obj, &obj.Status.CommonStatus, (&Reconciler{}).summary())
}
