package nova

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
)

// rolloutPoll checks a rolling Deployment again; the Deployment watch
// normally brings the next pass first.
const rolloutPoll = 10 * time.Second

// reconcileDeployments rolls the control plane group by group: the
// conductor, then the scheduler, then the API services. A group is applied
// only when every group before it runs its current template everywhere, so
// an upgrade never has a new API talking to an old conductor. The step
// runs only after the database step succeeded for this rollout.
func (r *Reconciler) reconcileDeployments(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova := p.nova
	for _, group := range rolloutGroups {
		var waiting []string
		for _, c := range group {
			if !wanted(nova, c) {
				if err := r.removeComponent(ctx, p, c); err != nil {
					return flow.Continue, err
				}
				continue
			}
			done, why, err := r.applyComponent(ctx, p, c)
			if err != nil {
				return flow.Continue, deploymentError(err)
			}
			if !done {
				waiting = append(waiting, ComponentName(nova, c)+" ("+why+")")
			}
		}
		if len(waiting) > 0 {
			return flow.Continue, flow.Wait(novav1alpha1.DeploymentsReadyCondition, novav1alpha1.DeploymentsProgressingReason, rolloutPoll,
				"waiting for %s", strings.Join(waiting, ", "))
		}
	}
	// Every Deployment runs the image and release whose Jobs succeeded.
	nova.Status.InstalledRelease = nova.Spec.OpenStackRelease
	conditionsOf(nova).Set(novav1alpha1.DeploymentsReadyCondition, metav1.ConditionTrue, novav1alpha1.DeploymentsAvailableReason,
		"every Deployment runs release "+nova.Spec.OpenStackRelease+" on all its replicas")
	return flow.Continue, nil
}

// applyComponent writes a component's Deployment, Service and PDB and
// reports whether the Deployment has rolled out.
func (r *Reconciler) applyComponent(ctx context.Context, p *pass, c Component) (bool, string, error) {
	nova, children := p.nova, p.children
	if svc := BuildService(nova, c); svc != nil {
		if err := children.Apply(ctx, nova, svc); err != nil {
			return false, "", err
		}
	}
	if err := children.Apply(ctx, nova, BuildPDB(nova, c)); err != nil {
		return false, "", err
	}
	d := BuildDeployment(nova, c, p.configHash)
	if err := children.Apply(ctx, nova, d); err != nil {
		return false, "", err
	}
	done, why := RolledOut(d)
	return done, why, nil
}

// removeComponent deletes what a component no longer wanted left behind.
func (r *Reconciler) removeComponent(ctx context.Context, p *pass, c Component) error {
	name := ComponentName(p.nova, c)
	for _, obj := range []client.Object{
		&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{},
	} {
		obj.SetNamespace(p.nova.Namespace)
		obj.SetName(name)
		if _, err := p.children.Delete(ctx, p.nova, obj); err != nil {
			return err
		}
	}
	return nil
}

// deploymentError classifies a failure to write a component: a same-named
// object Anvil does not own is invalid, anything else is retried.
func deploymentError(err error) error {
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(novav1alpha1.DeploymentsReadyCondition, novav1alpha1.DeploymentErrorReason, err)
	}
	return fmt.Errorf("deployments: %w", err)
}
