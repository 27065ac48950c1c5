package flow

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// PolicyCheck is the workload policy's verdict on one object of a
// privileged kind, and where to report it.
type PolicyCheck struct {
	// Namespace is the object's namespace, whose opt-in label is read.
	Namespace string
	// Refusals are the policy's refusals of the object's spec.
	Refusals field.ErrorList
	// Condition is the condition of the workload the policy withholds;
	// ErrorReason is its reason when the namespace cannot be read.
	Condition, ErrorReason string
	// Recheck is how soon a namespace without the opt-in is read again:
	// the label that lifts it changes no object the controller watches.
	Recheck time.Duration
}

// EnforceWorkloadPolicy is the first step of every privileged kind's pass:
// it refuses the object before the pass reads or writes anything for it.
// Admission checked the same policy; an object that bypassed it, or was
// admitted before the policy tightened, stops here. A refused spec is
// terminal until it or the policy changes; a namespace without the opt-in
// is a wait that reads as stalled.
func EnforceWorkloadPolicy(ctx context.Context, reader client.Reader, c PolicyCheck) error {
	if len(c.Refusals) > 0 {
		return Invalid(c.Condition, anvilmeta.RefusedByPolicyReason, c.Refusals.ToAggregate())
	}
	refusal, err := workloadpolicy.ReadOptIn(ctx, reader, c.Namespace)
	if err != nil {
		return Fail(c.Condition, c.ErrorReason, err)
	}
	if refusal != nil {
		// Only an administrator can label the namespace, so the object
		// reads as stalled while the controller keeps looking.
		return WaitOnUser(c.Condition, anvilmeta.NamespaceNotOptedInReason, c.Recheck, "%s", refusal.Error())
	}
	return nil
}
