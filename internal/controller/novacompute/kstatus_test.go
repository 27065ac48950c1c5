package novacompute

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/kstatustest"
)

// GitOps health checks read the NovaCompute through kstatus: Current when
// settled, InProgress while it waits, Failed on input no retry fixes.
func TestKstatusReadsEveryState(t *testing.T) {
	obj := &novav1alpha1.NovaCompute{TypeMeta: metav1.TypeMeta{APIVersion: novav1alpha1.GroupVersion.String(), Kind: "NovaCompute"}}
	kstatustest.Walk(t, obj, &obj.Status.CommonStatus, (&Reconciler{}).summary())
}
