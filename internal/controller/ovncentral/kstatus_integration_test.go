package ovncentral_test

import (
	"context"
	"testing"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/dev/kstatustest"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// A Certificate someone else owns under the name of the central's CA is
// input no retry fixes: the central stops at TLSReady and kstatus reads it
// Failed, with the step's reason, in the pass that meets it.
func TestIntegrationCentralStalledReadsFailed(t *testing.T) {
	e := startStack(t)
	ctx := context.Background()
	const name = "kst"
	foreign := &cmv1.Certificate{ObjectMeta: metav1.ObjectMeta{Name: name + "-ca", Namespace: testenv.WorkloadNamespace},
		Spec: cmv1.CertificateSpec{SecretName: name + "-foreign", CommonName: "someone else's",
			IssuerRef: cmmeta.IssuerReference{Name: "someone-elses"}}}
	if err := e.Management.Client.Create(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Management.Client.Delete(context.Background(), foreign) })
	c := newCentral(t, name, 1, 31940, 31950)
	res := kstatustest.Await(t, e.Management.Client, c, status.FailedStatus)
	if stalled := res.Conditions; len(stalled) != 1 || stalled[0].Reason != ovnv1alpha1.CertificateErrorReason {
		t.Errorf("kstatus reads %+v, want Stalled under %s", res, ovnv1alpha1.CertificateErrorReason)
	}
}
