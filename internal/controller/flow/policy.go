package flow

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
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
// is a wait. The Namespace is read without a cache, since the operator
// caches no Namespaces.
func EnforceWorkloadPolicy(ctx context.Context, reader client.Reader, c PolicyCheck) error {
	if len(c.Refusals) > 0 {
		return Invalid(c.Condition, anvilmeta.RefusedByPolicyReason, c.Refusals.ToAggregate())
	}
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: c.Namespace}, ns); err != nil {
		return Fail(c.Condition, c.ErrorReason,
			fmt.Errorf("reading namespace %s for its %s label: %w", c.Namespace, anvilmeta.PrivilegedNamespaceLabel, err))
	}
	if err := workloadpolicy.CheckNamespace(ns); err != nil {
		return Wait(c.Condition, anvilmeta.NamespaceNotOptedInReason, c.Recheck, "%s", err.Error())
	}
	return nil
}
