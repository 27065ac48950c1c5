package controlplane

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
)

// AdminSession is the pass's Keystone admin session: the accounts and the
// catalog Anvil manages.
type AdminSession interface {
	openstack.Accounts
	openstack.Catalog
}

// reconcileCatalog registers Nova's API as the region's compute service
// once the Nova is Ready, and removes the registration when the spec no
// longer asks for it or the ControlPlane is deleted. It writes to Keystone
// only what differs, so a settled catalog costs reads only.
func (r *Reconciler) reconcileCatalog(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	if p.novaRolling {
		// A Nova API that is rolling out is registered as it was, or not
		// yet: the catalog changes only once the Nova is Ready.
		return flow.Continue, nil
	}
	desired := WantedCatalog(cp)
	ks := cp.Spec.Services.Keystone
	switch {
	case len(desired.Endpoints) == 0:
		if err := r.pruneCatalog(ctx, p); err != nil {
			return flow.Continue, catalogError(err)
		}
		setCatalogReady(cp, c5c3v1alpha1.CatalogNotManagedReason, "services.nova is not set")
		return flow.Continue, nil
	case ks.AdminCredentialsSecretRef == nil:
		setCatalogReady(cp, c5c3v1alpha1.CatalogNotManagedReason,
			"services.keystone.adminCredentialsSecretRef is not set: Anvil cannot write the Keystone catalog")
		return flow.Continue, nil
	}
	plan, err := r.applyCatalog(ctx, p, desired)
	if err != nil {
		return flow.Continue, catalogError(err)
	}
	p.catalogHeld = plan.Keeps()
	r.recordCatalogWrites(cp, desired.Region, plan)
	if plan.Foreign != "" {
		setCatalogReady(cp, c5c3v1alpha1.CatalogNotManagedReason, fmt.Sprintf(
			"the compute service %s has endpoints in region %q and was not created by this ControlPlane; Anvil leaves the region's compute catalog to it",
			plan.Foreign, desired.Region))
		// Keystone sends no events: look again, to register once it is gone.
		return flow.Requeue(foreignRequeue), nil
	}
	setCatalogReady(cp, c5c3v1alpha1.CatalogRegisteredReason, fmt.Sprintf("the compute service %s has the %s endpoint(s) in region %q",
		plan.ServiceID, interfacesOf(desired), desired.Region))
	return flow.Continue, nil
}

// applyCatalog reads the compute services and their endpoints, decides,
// and writes the plan: creations and updates first, so that a region
// never lacks an endpoint that is being replaced, deletions last.
func (r *Reconciler) applyCatalog(ctx context.Context, p *pass, desired DesiredCatalog) (CatalogPlan, error) {
	cat, err := r.catalog(ctx, p)
	if err != nil {
		return CatalogPlan{}, err
	}
	existing, err := readComputeCatalog(ctx, cat)
	if err != nil {
		return CatalogPlan{}, err
	}
	plan := DecideCatalog(existing, desired, AccountDescription(p.cp))
	if plan.CreateService || len(plan.CreateEndpoints) > 0 {
		// The finalizer comes first: from the first catalog write on, a
		// deleted ControlPlane must remove what it registered.
		if err := flow.AddFinalizer(ctx, r.Client, p.cp, c5c3v1alpha1.AccountsFinalizer); err != nil {
			return plan, err
		}
	}
	if plan.CreateService {
		plan.ServiceID, err = cat.CreateCatalogService(ctx, openstack.RegisteredService{
			Type: computeServiceType, Name: computeServiceName, Description: AccountDescription(p.cp), Enabled: true,
		})
		if err != nil {
			return plan, err
		}
		plan.CreateService = false
	}
	for _, ep := range plan.CreateEndpoints {
		if _, err := cat.CreateEndpoint(ctx, plan.ServiceID, ep); err != nil {
			return plan, err
		}
	}
	for _, ep := range plan.UpdateEndpoints {
		if err := cat.UpdateEndpointURL(ctx, ep.ID, ep.URL); err != nil {
			return plan, err
		}
	}
	return plan, deleteFromCatalog(ctx, cat, plan)
}

// pruneCatalog removes every compute service this ControlPlane registered,
// with its endpoints. Anvil adds the accounts finalizer before it
// registers anything, so a ControlPlane without it has nothing to remove
// and costs no Keystone call; neither does one without admin credentials,
// which cannot reach Keystone.
func (r *Reconciler) pruneCatalog(ctx context.Context, p *pass) error {
	cp := p.cp
	ks := cp.Spec.Services.Keystone
	if !controllerutil.ContainsFinalizer(cp, c5c3v1alpha1.AccountsFinalizer) || ks == nil || ks.AdminCredentialsSecretRef == nil {
		return nil
	}
	cat, err := r.catalog(ctx, p)
	if err != nil {
		return err
	}
	existing, err := readComputeCatalog(ctx, cat)
	if err != nil {
		return err
	}
	plan := DecideCatalog(existing, DesiredCatalog{}, AccountDescription(cp))
	if err := deleteFromCatalog(ctx, cat, plan); err != nil {
		return err
	}
	p.catalogHeld = false
	r.recordCatalogWrites(cp, ks.Region, plan)
	return nil
}

// recordCatalogWrites records what a pass wrote to the catalog: a
// registration or an update under CatalogRegistered, a removal alone under
// CatalogRemoved. A pass that wrote nothing records nothing.
func (r *Reconciler) recordCatalogWrites(cp *c5c3v1alpha1.ControlPlane, region string, plan CatalogPlan) {
	switch {
	case !plan.Writes():
	case plan.Keeps() && (len(plan.CreateEndpoints) > 0 || len(plan.UpdateEndpoints) > 0):
		r.Recorder.Eventf(cp, nil, corev1.EventTypeNormal, c5c3v1alpha1.CatalogRegisteredReason, "Register",
			"Keystone catalog, region %q: %s", region, plan.Summary())
	default:
		r.Recorder.Eventf(cp, nil, corev1.EventTypeNormal, c5c3v1alpha1.CatalogRemovedEvent, "Delete",
			"Keystone catalog, region %q: %s", region, plan.Summary())
	}
}

// deleteFromCatalog deletes the plan's endpoints, then its services.
func deleteFromCatalog(ctx context.Context, cat openstack.Catalog, plan CatalogPlan) error {
	for _, id := range plan.DeleteEndpoints {
		if err := cat.DeleteEndpoint(ctx, id); err != nil {
			return err
		}
	}
	for _, id := range plan.DeleteServices {
		if err := cat.DeleteCatalogService(ctx, id); err != nil {
			return err
		}
	}
	return nil
}

// readComputeCatalog lists the compute services and each one's endpoints.
func readComputeCatalog(ctx context.Context, cat openstack.Catalog) ([]CatalogService, error) {
	svcs, err := cat.ListCatalogServices(ctx, computeServiceType)
	if err != nil {
		return nil, err
	}
	out := make([]CatalogService, 0, len(svcs))
	for _, s := range svcs {
		eps, err := cat.ListEndpoints(ctx, s.ID)
		if err != nil {
			return nil, err
		}
		out = append(out, CatalogService{Service: s, Endpoints: eps})
	}
	return out, nil
}

// catalog returns the pass's admin session, opening it on first use.
func (r *Reconciler) catalog(ctx context.Context, p *pass) (openstack.Catalog, error) {
	if _, err := r.accounts(ctx, p); err != nil {
		return nil, err
	}
	return p.keystone, nil
}

// releaseAccountsFinalizer runs releaseFinalizer unless the catalog step
// left a registration the finalizer must guard.
func (r *Reconciler) releaseAccountsFinalizer(ctx context.Context, p *pass) (flow.Outcome, error) {
	// A rolling Nova skipped the catalog, which may hold its entries.
	if p.catalogHeld || p.novaRolling {
		return flow.Continue, nil
	}
	return r.releaseFinalizer(ctx, p)
}

// setCatalogReady reports ComputeCatalogReady True; a failure reports it
// False through the step's error.
func setCatalogReady(cp *c5c3v1alpha1.ControlPlane, reason, message string) {
	conditionsOf(cp).Set(c5c3v1alpha1.ComputeCatalogReadyCondition, metav1.ConditionTrue, reason, message)
}

// catalogError files a failure under ComputeCatalogReady. A classified
// failure keeps its reason, such as the wait for the admin credentials,
// which adminCredentials reports on NovaReady; anything else is a Keystone
// failure, retried with backoff.
func catalogError(err error) error {
	var step *flow.StepError
	if errors.As(err, &step) {
		moved := *step
		moved.Condition = c5c3v1alpha1.ComputeCatalogReadyCondition
		return &moved
	}
	return flow.Fail(c5c3v1alpha1.ComputeCatalogReadyCondition, c5c3v1alpha1.CatalogErrorReason, fmt.Errorf("compute catalog: %w", err))
}

// interfacesOf names the desired interfaces, for the condition's message.
func interfacesOf(d DesiredCatalog) string {
	if len(d.Endpoints) > 1 {
		return interfaceInternal + " and " + interfacePublic
	}
	return interfaceInternal
}
