package testenv

import (
	"context"

	cmv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TriggerRenewal asks cert-manager to issue crt again now, the way `cmctl
// renew` does: it sets the Certificate's Issuing condition to True with
// reason ManuallyTriggered, which the v1.21 controllers take as a request
// for a new certificate. Only crt's namespace and name are read.
func TriggerRenewal(ctx context.Context, c client.Client, crt *cmv1.Certificate) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &cmv1.Certificate{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(crt), cur); err != nil {
			return err
		}
		now := metav1.Now()
		conds := []cmv1.CertificateCondition{{
			Type: cmv1.CertificateConditionIssuing, Status: cmmeta.ConditionTrue,
			Reason: "ManuallyTriggered", Message: "Certificate re-issuance manually triggered",
			LastTransitionTime: &now, ObservedGeneration: cur.Generation,
		}}
		for _, cond := range cur.Status.Conditions {
			if cond.Type != cmv1.CertificateConditionIssuing {
				conds = append(conds, cond)
			}
		}
		cur.Status.Conditions = conds
		return c.Status().Update(ctx, cur)
	})
}
