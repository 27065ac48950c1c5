package neutronmetadataagent

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/placement"
	"github.com/anvil/anvil/internal/targetcluster"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// childKinds are what an agent writes onto its cluster; a placed agent's
// teardown sweeps them. The shared secret's copy is not among them: it is
// the ControlPlane's, which deletes it once no agent on the cluster names
// it.
var childKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Version: "v1", Kind: "ConfigMap"},
}

// Reconciler reconciles NeutronMetadataAgent objects.
type Reconciler struct {
	// Client reads and writes the management cluster.
	Client client.Client
	// APIReader reads the management cluster without a cache.
	APIReader client.Reader
	// Scheme maps types to kinds for ownership.
	Scheme *runtime.Scheme
	// Registry resolves targetClusterRef; nil turns placed agents off.
	Registry *targetcluster.Registry
	// Teardown removes a placed agent's children on deletion.
	Teardown *placement.Teardown
	// Recorder records the events of condition transitions and of the
	// teardown.
	Recorder events.EventRecorder
	// Policy is what an agent may run; the webhook checks the same.
	Policy workloadpolicy.Policy
}

// +kubebuilder:rbac:groups=neutron.openstack.c5c3.io,resources=neutronmetadataagents,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=neutron.openstack.c5c3.io,resources=neutronmetadataagents/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=neutron.openstack.c5c3.io,resources=neutronmetadataagents/finalizers,verbs=update
// +kubebuilder:rbac:groups=ovn.openstack.c5c3.io,resources=ovnchassis;ovncentrals,verbs=get;list;watch
// +kubebuilder:rbac:groups=c5c3.io,resources=controlplanes,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch

// pass is what one pass over an agent builds up, step by step.
type pass struct {
	agent *neutronv1alpha1.NeutronMetadataAgent
	// children is where the children live, live reads that cluster
	// without a cache. Set by Cluster.
	children *childwriter.Writer
	live     client.Reader
	// chassis is what the chassis and its central resolved to. Set by
	// Chassis.
	chassis ResolvedChassis
	// centralName is the chassis's OVNCentral, whose ControlPlane's Nova
	// checks the shared secret. Set by Chassis.
	centralName string
	// secretHash is SharedSecretHash of the shared secret, "" without
	// one. Set by Secrets.
	secretHash string
	// configMap and configHash are the rendered configuration's ConfigMap
	// and the hash of it and the scripts. Set by Config.
	configMap  string
	configHash string
}

// steps are the pass's steps in order, each with the condition it owns.
func (r *Reconciler) steps() []flow.Step[*pass] {
	return []flow.Step[*pass]{
		{Condition: neutronv1alpha1.ChassisReadyCondition, Run: r.reconcilePolicy},
		{Condition: neutronv1alpha1.ChassisReadyCondition, Run: r.place},
		{Condition: neutronv1alpha1.ChassisReadyCondition, Run: r.reconcileChassis},
		{Condition: neutronv1alpha1.SecretsReadyCondition, Run: r.reconcileSecrets},
		{Condition: neutronv1alpha1.SecretsReadyCondition, Run: r.reconcileConfig},
		{Condition: neutronv1alpha1.DaemonSetReadyCondition, Run: r.reconcileDaemonSet},
	}
}

// Reconcile brings one agent up to date: get, defer the status patch,
// take the deletion branch, then run the steps in order.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, retErr error) {
	agent := &neutronv1alpha1.NeutronMetadataAgent{}
	if err := r.Client.Get(ctx, req.NamespacedName, agent); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := agent.DeepCopy()
	p := &pass{agent: agent}
	var passErr error
	defer func() {
		flow.JoinPatchError(&res, &retErr, r.patchStatus(ctx, before, agent, passErr))
	}()

	if !agent.DeletionTimestamp.IsZero() {
		return r.placement().Release(ctx, agent, conditionsOf(agent))
	}
	var out flow.Outcome
	out, passErr = flow.Run(ctx, conditionsOf(agent), p, r.steps())
	return flow.Result(out, passErr)
}

// reconcilePolicy refuses an agent the workload policy forbids before the
// pass reads or writes anything for it. The refusal is reported on
// DaemonSetReady, the condition of the privileged DaemonSet it withholds.
func (r *Reconciler) reconcilePolicy(ctx context.Context, p *pass) (flow.Outcome, error) {
	return flow.Continue, flow.EnforceWorkloadPolicy(ctx, r.APIReader, flow.PolicyCheck{
		Namespace:   p.agent.Namespace,
		Refusals:    r.Policy.CheckNeutronMetadataAgent(p.agent),
		Condition:   neutronv1alpha1.DaemonSetReadyCondition,
		ErrorReason: neutronv1alpha1.DaemonSetErrorReason,
		Recheck:     chassisPoll,
	})
}

// placement is the agent's part of the placement protocol: the condition
// that reports an unusable cluster, how soon it looks again, and the kinds
// of its children.
func (r *Reconciler) placement() placement.Protocol {
	return placement.Protocol{Client: r.Client, Scheme: r.Scheme, APIReader: r.APIReader, Registry: r.Registry, Teardown: r.Teardown,
		Condition: neutronv1alpha1.ChassisReadyCondition, Poll: chassisPoll, Kinds: childKinds}
}

// place resolves where the children live and, for a placed agent, holds
// it with the remote-children finalizer before anything is written there;
// a cluster that cannot be used stops the pass before anything else.
func (r *Reconciler) place(ctx context.Context, p *pass) (flow.Outcome, error) {
	at, err := placement.Resolve(ctx, r.placement(), p.agent)
	if err != nil {
		return flow.Continue, err
	}
	p.children, p.live = at.Children, at.Live
	return flow.Continue, nil
}
