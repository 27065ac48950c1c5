package controlplane

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
)

// TestFailingStepLeavesReadyNotTrue runs the ControlPlane's real step list
// with every step before the failing one succeeding, then derives the
// status the way patchStatus does. A failed step must leave NovaReady
// False under its reason and Ready False under the same reason, even
// though both were True for the generation before; observedGeneration
// moves only when the status describes the new generation.
func TestFailingStepLeavesReadyNotTrue(t *testing.T) {
	r := &Reconciler{}
	tests := []struct {
		name           string
		step           int
		err            error
		wantReason     string
		wantGeneration int64
	}{
		{name: "bus Secret missing", step: 1,
			err:        flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForMessagingReason, waitRequeue, "spec.infrastructure.messaging.secretRef: Secret openstack/bus does not exist"),
			wantReason: c5c3v1alpha1.WaitingForMessagingReason, wantGeneration: 2},
		{name: "projection refused", step: 1,
			err:        flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaProjectionRejectedReason, errors.New("spec.region: Invalid value")),
			wantReason: c5c3v1alpha1.NovaProjectionRejectedReason, wantGeneration: 2},
		{name: "Nova not Ready yet", step: 1,
			err:        flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForNovaReason, waitRequeue, "waiting for Nova cp-nova"),
			wantReason: c5c3v1alpha1.WaitingForNovaReason, wantGeneration: 2},
		{name: "an apiserver error while projecting", step: 1, err: novaError(errors.New("etcdserver: request timed out")),
			wantReason: c5c3v1alpha1.NovaErrorReason, wantGeneration: 1},
		{name: "the account cannot be provisioned", step: 2,
			err:        hypervisorOperatorError(errors.New("identity: create user: HTTP 500")),
			wantReason: c5c3v1alpha1.HypervisorOperatorErrorReason, wantGeneration: 1},
		{name: "a mirror cannot be written", step: 6,
			err:        flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaComputeConfigErrorReason, waitRequeue, "on compute-a: not owned"),
			wantReason: c5c3v1alpha1.NovaComputeConfigErrorReason, wantGeneration: 2},
		{name: "an unclassified error while mirroring", step: 3, err: errors.New("connection refused"),
			wantReason: anvilmeta.ReconcileErrorReason, wantGeneration: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			cp.Status.ObservedGeneration = 1
			cp.Status.Conditions = []metav1.Condition{{Type: c5c3v1alpha1.NovaReadyCondition, Status: metav1.ConditionTrue,
				Reason: c5c3v1alpha1.NovaReadyReason, ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Now())}}
			steps := r.steps()
			for i := range steps {
				steps[i].Run = func(context.Context, *pass) (flow.Outcome, error) {
					if i == tt.step {
						return flow.Continue, tt.err
					}
					setNovaReady(cp, c5c3v1alpha1.NovaReadyReason, "")
					return flow.Continue, nil
				}
			}
			_, err := flow.Run(context.Background(), conditionsOf(cp), &pass{cp: cp}, steps)
			conditions.Summarize(&cp.Status.CommonStatus, cp.Generation, err, r.summary())

			c := apimeta.FindStatusCondition(cp.Status.Conditions, c5c3v1alpha1.NovaReadyCondition)
			if c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Fatalf("NovaReady = %+v, want False %s at generation 2", c, tt.wantReason)
			}
			ready := apimeta.FindStatusCondition(cp.Status.Conditions, anvilmeta.ReadyCondition)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.wantReason || !strings.HasPrefix(ready.Message, c5c3v1alpha1.NovaReadyCondition+": ") {
				t.Errorf("Ready = %+v, want False %s naming NovaReady", ready, tt.wantReason)
			}
			if cp.Status.ObservedGeneration != tt.wantGeneration {
				t.Errorf("observedGeneration = %d, want %d", cp.Status.ObservedGeneration, tt.wantGeneration)
			}
		})
	}
}
