package controlplane

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/dev/kstatustest"
)

// GitOps health checks read the ControlPlane through kstatus: Current when
// settled, InProgress while it waits, Failed on input no retry fixes.
func TestKstatusReadsEveryState(t *testing.T) {
	obj := &c5c3v1alpha1.ControlPlane{TypeMeta: metav1.TypeMeta{APIVersion: c5c3v1alpha1.GroupVersion.String(), Kind: "ControlPlane"}}
	kstatustest.Walk(t, obj, &obj.Status.CommonStatus, (&Reconciler{}).summary())
}
