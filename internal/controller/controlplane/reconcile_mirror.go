package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

// MirrorTargets returns the clusters that need the Nova's contract: the
// distinct clusters of the Nova's pools that are not being deleted, without
// the Nova's own cluster, sorted by name. It is pure, so the rules are
// table-tested.
func MirrorTargets(nova *novav1alpha1.Nova, pools []novav1alpha1.NovaCompute) []string {
	return poolClusterSet(nova, pools, false)
}

// DrainingClusters returns the clusters where a pool of the Nova is being
// deleted, without the Nova's own cluster, sorted by name. Such a pool
// still drains with what its pods mounted, so the copies on its cluster
// stay, unwritten, until it is gone. It is pure.
func DrainingClusters(nova *novav1alpha1.Nova, pools []novav1alpha1.NovaCompute) []string {
	return poolClusterSet(nova, pools, true)
}

// poolClusterSet is the sorted set of clusters of the Nova's pools that
// are being deleted (deleting) or not, without the Nova's own cluster.
func poolClusterSet(nova *novav1alpha1.Nova, pools []novav1alpha1.NovaCompute, deleting bool) []string {
	seen := map[string]bool{}
	for i := range pools {
		p := &pools[i]
		if p.Namespace != nova.Namespace || p.Spec.NovaRef.Name != nova.Name || p.DeletionTimestamp.IsZero() == deleting {
			continue
		}
		if c := p.TargetClusterName(); c != nova.TargetClusterName() {
			seen[c] = true
		}
	}
	targets := make([]string, 0, len(seen))
	for c := range seen {
		targets = append(targets, c)
	}
	sort.Strings(targets)
	return targets
}

// MirrorName is the name of the copy on a compute cluster: always the
// in-cluster contract's name, which a pool derives from the Nova's status.
func MirrorName(cp *c5c3v1alpha1.ControlPlane) string {
	return NovaName(cp) + novav1alpha1.ComputeConfigSuffix
}

// BuildMirror renders the copy of the contract for a compute cluster from
// the contract's data. The ownership labels are added when it is claimed.
func BuildMirror(cp *c5c3v1alpha1.ControlPlane, namespace string, contract map[string][]byte) *corev1.Secret {
	data := make(map[string][]byte, len(contract))
	for k, v := range contract {
		data[k] = append([]byte(nil), v...)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      MirrorName(cp),
			Namespace: namespace,
			Labels: map[string]string{
				c5c3v1alpha1.ComputeConfigMirrorLabel: "true",
				novav1alpha1.ComponentLabel:           novav1alpha1.ComputeConfigComponent,
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// renderError classifies a contract that did not render. Every mirror
// stays as it was. A missing input is a wait; an input the Nova would
// refuse too is terminal until the user mends it, and names the field;
// anything else, a failed read say, is retried.
func renderError(nova *novav1alpha1.Nova, err error) error {
	switch {
	case inputs.IsMissing(err):
		return flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForComputeConfigReason, waitRequeue,
			"waiting for the contract of Nova %s/%s to render: %s", nova.Namespace, nova.Name, err.Error())
	case inputs.IsInvalid(err):
		return flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason,
			fmt.Errorf("the contract of Nova %s/%s does not render: %w", nova.Namespace, nova.Name, err))
	default:
		return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason,
			fmt.Errorf("rendering the contract of Nova %s/%s: %w", nova.Namespace, nova.Name, err))
	}
}

// clusterResult is how one mirror target fared.
type clusterResult struct {
	cluster string
	reason  string
	message string
}

// reconcileMirrors writes the contract onto every target cluster, and the
// hypervisor operator's auth Secret, when there is one, onto those whose
// namespace asks for it. A cluster that fails is noted for
// reportDeliveries and never keeps the others from being served.
func (r *Reconciler) reconcileMirrors(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp, nova := p.cp, p.nova
	if nova == nil {
		return flow.Continue, nil
	}
	plan, err := r.mirrorTargets(ctx, cp, p.namespace)
	if err != nil {
		return flow.Continue, err
	}
	targets, withheld := plan.targets, plan.withheld
	p.targets, p.pools, p.withheld = targets, plan.pools, withheld
	for _, cluster := range plan.kept {
		p.wantCopy(cluster, MirrorName(cp))
		p.wantCopy(cluster, HypervisorOperatorAuthName(cp))
	}
	// A namespace's opt-in changes no object this controller watches, so a
	// withheld pool is judged again after a while.
	out := flow.Continue
	if len(withheld) > 0 {
		out = flow.Requeue(withheldRequeue)
	}
	if len(targets) == 0 {
		return out, nil
	}

	// The contract is rendered here, from the Nova's inputs, by the code
	// that publishes it: a rotated password then reaches the compute
	// clusters one write and one watch sooner than through the published
	// Secret, which the same inputs make equal.
	contract, err := inputs.DeliveredNovaContract(ctx, deliveredReader{Reader: r.Client, namespace: nova.Namespace, secrets: p.delivered}, nova)
	if err != nil {
		return flow.Continue, renderError(nova, err)
	}
	p.mirrorContract = contract

	// Per-cluster credentials come from Keystone and the pass's own
	// objects, one cluster after the other; the writes to the clusters
	// then go out at once, so that a contract reaches sixteen clusters
	// about as fast as one, and a slow cluster delays no other.
	var ready []delivery
	for _, cluster := range targets {
		p.wantCopy(cluster, MirrorName(cp))
		mirror := BuildMirror(cp, nova.Namespace, contract)
		if PerCluster(cp) {
			if res := r.perClusterMirror(ctx, p, cluster, mirror); res != nil {
				p.failures = append(p.failures, *res)
				continue
			}
		}
		ready = append(ready, delivery{cluster: cluster, mirror: mirror, hash: novaconfig.Hash(mirror.Data)})
	}
	if p.hvoAuth != nil {
		p.authWithheld = r.markAuthCopies(ctx, cp.Namespace, ready)
		if PerCluster(cp) {
			ready = r.perClusterAuth(ctx, p, ready)
		}
	}
	if len(ready) > 0 {
		if err := r.holdDeliveries(ctx, cp); err != nil {
			return flow.Continue, err
		}
	}
	p.mirrorHashes = map[string]string{}
	results := r.deliverAll(ctx, cp, ready, p.hvoAuth)
	p.wantAuthCopies(targets, ready, results)
	for i, res := range results {
		for _, s := range res.wrote {
			cp.Status.Deliveries = RecordDelivery(cp.Status.Deliveries, ready[i].cluster, s)
		}
		if res.problem != nil {
			p.failures = append(p.failures, *res.problem)
			continue
		}
		p.mirrorHashes[ready[i].cluster] = ready[i].hash
	}
	return out, nil
}

// wantAuthCopies records where the pass delivers the hypervisor operator's
// auth copy: on each target whose delivery carries it, and on each target
// the pass could not serve, where the copy stays as it is until a pass
// can tell. Where neither holds, or no account is asked for, a copy
// delivered before is withdrawn.
func (p *pass) wantAuthCopies(targets []string, ready []delivery, results []deliveryResult) {
	if p.hvoAuth == nil {
		return
	}
	served := map[string]bool{}
	for i, d := range ready {
		if results[i].problem == nil && !d.auth && d.authData == nil {
			served[d.cluster] = true
		}
	}
	for _, c := range targets {
		if !served[c] {
			p.wantCopy(c, HypervisorOperatorAuthName(p.cp))
		}
	}
}

// withheldRequeue is how often withheld pools are judged again.
const withheldRequeue = time.Minute

// deliveryParallelism bounds the clusters written to at once.
const deliveryParallelism = 32

// delivery is one cluster's rendered mirror and the hash of its data, and
// whether the cluster gets the hypervisor operator's auth Secret, with
// authData when its copy names a user of its own.
type delivery struct {
	cluster  string
	mirror   *corev1.Secret
	hash     string
	auth     bool
	authData map[string][]byte
}

// deliveryResult is what one delivery wrote, and its problem, or nil.
type deliveryResult struct {
	wrote   []*corev1.Secret
	problem *clusterResult
}

// deliverAll writes each delivery's mirror to its cluster, several
// clusters at a time, and then the auth Secret's copy to the clusters
// that ask for it. The i-th result is the i-th delivery's.
func (r *Reconciler) deliverAll(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, ready []delivery, auth map[string][]byte) []deliveryResult {
	results := make([]deliveryResult, len(ready))
	slots := make(chan struct{}, deliveryParallelism)
	var wg sync.WaitGroup
	for i, d := range ready {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			res := &results[i]
			if res.problem = r.mirrorTo(ctx, cp, d.cluster, d.mirror); res.problem != nil {
				return
			}
			res.wrote = append(res.wrote, d.mirror)
			data := d.authData
			if data == nil && d.auth {
				data = auth
			}
			if auth == nil || data == nil {
				return
			}
			var copied *corev1.Secret
			if copied, res.problem = r.copyAuthTo(ctx, cp, d.cluster, data); res.problem == nil {
				res.wrote = append(res.wrote, copied)
			}
		}()
	}
	wg.Wait()
	return results
}

// reportDeliveries ends the delivery: NovaReady is True once every target
// cluster got what it needs and the Nova is Ready; otherwise it names every
// cluster that did not, or waits for the Nova's rollout.
func (r *Reconciler) reportDeliveries(_ context.Context, p *pass) (flow.Outcome, error) {
	if p.nova == nil {
		return flow.Continue, nil
	}
	if len(p.failures) > 0 {
		reason, message := summarizeMirrors(p.failures)
		return flow.Continue, flow.Wait(c5c3v1alpha1.NovaReadyCondition, reason, waitRequeue, "%s", message)
	}
	if p.novaRolling {
		return flow.Continue, waitForNova(p.nova)
	}
	message := fmt.Sprintf("Nova %s is Ready; no compute cluster needs its contract", p.nova.Name)
	if len(p.targets) > 0 {
		message = fmt.Sprintf("Nova %s is Ready; %s", p.nova.Name, describeDeliveries(p.targets, p.hvoAuth != nil, p.authWithheld))
	}
	if len(p.withheld) > 0 {
		message += "; no contract goes out for pools " + describeWithheld(p.withheld)
	}
	setNovaReady(p.cp, c5c3v1alpha1.NovaReadyReason, message)
	return flow.Continue, nil
}

// describeDeliveries says what reached which target cluster: the contract
// everywhere, and the hypervisor operator's auth Secret, when there is
// one, everywhere but on the clusters that withhold it.
func describeDeliveries(targets []string, auth bool, withheld []string) string {
	all := strings.Join(targets, ", ")
	switch {
	case !auth:
		return "its contract is on " + all
	case len(withheld) == 0:
		return "its contract and the hypervisor operator's auth Secret are on " + all
	case len(withheld) == len(targets):
		return fmt.Sprintf("its contract is on %s; the hypervisor operator's auth Secret is withheld there (no %s=true on the namespace)",
			all, c5c3v1alpha1.HypervisorOperatorCredentialsLabel)
	}
	var copied []string
	for _, t := range targets {
		if !slices.Contains(withheld, t) {
			copied = append(copied, t)
		}
	}
	return fmt.Sprintf("its contract is on %s, and the hypervisor operator's auth Secret on %s; withheld from %s (no %s=true on the namespace)",
		all, strings.Join(copied, ", "), strings.Join(withheld, ", "), c5c3v1alpha1.HypervisorOperatorCredentialsLabel)
}

// perClusterMirror renders mirror for a cluster with its own user, and
// reports a problem, or nil.
func (r *Reconciler) perClusterMirror(ctx context.Context, p *pass, cluster string, mirror *corev1.Secret) *clusterResult {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		// Nothing is issued for a cluster that cannot receive it.
		return &clusterResult{cluster, anvilmeta.TargetClusterUnavailableReason, err.Error()}
	}
	live := &corev1.Secret{}
	if err := children.Reader.Get(ctx, client.ObjectKeyFromObject(mirror), live); err != nil {
		live = nil
	}
	err = r.renderForCluster(ctx, p, cluster, mirror, live)
	var step *flow.StepError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &step):
		return &clusterResult{cluster, step.Reason, fmt.Sprintf("on %s: %s", cluster, step.Err.Error())}
	}
	return &clusterResult{cluster, c5c3v1alpha1.ComputeCredentialsErrorReason, fmt.Sprintf("on %s: the cluster's own credentials: %s", cluster, err.Error())}
}

// poolClusters lists the pools in the Nova's namespace and returns the
// clusters any of them runs on, with the pools. Pruning and teardown use
// it, since a cluster may hold what a pass wrote before its pools were
// withheld. A cluster without the NovaCompute kind has no pools.
func (r *Reconciler) poolClusters(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) ([]string, []novav1alpha1.NovaCompute, error) {
	pools := &novav1alpha1.NovaComputeList{}
	if err := r.Client.List(ctx, pools, client.InNamespace(cp.Namespace)); err != nil {
		if !apimeta.IsNoMatchError(err) {
			return nil, nil, flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaComputeConfigErrorReason,
				fmt.Errorf("listing the Nova's pools: %w", err))
		}
		pools.Items = nil
	}
	// The projected Nova lives beside the ControlPlane, on its cluster.
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: NovaName(cp), Namespace: cp.Namespace}}
	return MirrorTargets(nova, pools.Items), pools.Items, nil
}

// mirrorTargets returns the clusters that need the Nova's contract: those
// of the pools that may run, which it returns too, with the pools the pool
// policy withholds and the clusters where a pool drains. ahead is the
// pass's namespace read, or nil.
func (r *Reconciler) mirrorTargets(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, ahead *namespaceRead) (mirrorPlan, error) {
	_, pools, err := r.poolClusters(ctx, cp)
	if err != nil {
		return mirrorPlan{}, err
	}
	// Only this Nova's pools are judged: another Nova's refused pool is
	// not this ControlPlane's to report.
	pools = slices.DeleteFunc(pools, func(p novav1alpha1.NovaCompute) bool { return p.Spec.NovaRef.Name != NovaName(cp) })
	if len(pools) == 0 {
		return mirrorPlan{}, nil
	}
	optedIn, err := r.optedIn(ctx, ahead, cp.Namespace)
	if err != nil {
		return mirrorPlan{}, flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaComputeConfigErrorReason, err)
	}
	runnable, withheld := RunnablePools(pools, r.PoolPolicy, optedIn)
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: NovaName(cp), Namespace: cp.Namespace}}
	refused := slices.DeleteFunc(slices.Clone(pools), func(p novav1alpha1.NovaCompute) bool {
		return slices.ContainsFunc(runnable, func(q novav1alpha1.NovaCompute) bool { return q.Name == p.Name })
	})
	kept := append(DrainingClusters(nova, pools), MirrorTargets(nova, refused)...)
	return mirrorPlan{targets: MirrorTargets(nova, runnable), pools: runnable, withheld: withheld, kept: kept}, nil
}

// mirrorPlan is where a pass delivers the contract: the target clusters
// with the pools that may run, the pools withheld, and the clusters whose
// copies stay as they are, unwritten: where a pool drains, and where the
// pool policy withholds a pool, so that a namespace label removed by
// mistake does not break computes that run.
type mirrorPlan struct {
	targets  []string
	pools    []novav1alpha1.NovaCompute
	withheld []Withheld
	kept     []string
}

// copyAuthTo writes the hypervisor operator's auth Secret onto one
// cluster, with the mirror label, and returns what it wrote, or a problem.
func (r *Reconciler) copyAuthTo(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string, data map[string][]byte) (*corev1.Secret, *clusterResult) {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		return nil, &clusterResult{cluster, anvilmeta.TargetClusterUnavailableReason, err.Error()}
	}
	copied := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: HypervisorOperatorAuthName(cp), Namespace: cp.Namespace,
			Labels: map[string]string{c5c3v1alpha1.ComputeConfigMirrorLabel: "true"}},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
	if err := children.Apply(ctx, cp, copied); err != nil {
		return nil, &clusterResult{cluster, c5c3v1alpha1.HypervisorOperatorErrorReason,
			fmt.Sprintf("on %s: writing Secret %s/%s: %s", cluster, copied.Namespace, copied.Name, err.Error())}
	}
	return copied, nil
}

// mirrorTo writes the copy onto one cluster and reports a problem, or nil.
func (r *Reconciler) mirrorTo(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, cluster string, mirror *corev1.Secret) *clusterResult {
	children, err := r.Registry.WriterFor(cluster, nil)
	if err != nil {
		return &clusterResult{cluster, anvilmeta.TargetClusterUnavailableReason, err.Error()}
	}
	namespace := mirror.Namespace
	// The cluster's cache watches these Secrets' metadata, so a changed
	// contract goes out without reading the mirror first.
	err = children.Apply(ctx, cp, mirror, childwriter.ChangeFromCache)
	var notOwned *childwriter.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		return &clusterResult{cluster, c5c3v1alpha1.NovaComputeConfigErrorReason, fmt.Sprintf("on %s: %s", cluster, err.Error())}
	case err != nil:
		return &clusterResult{cluster, c5c3v1alpha1.NovaComputeConfigErrorReason, fmt.Sprintf("on %s: writing Secret %s/%s: %s", cluster, namespace, mirror.Name, err.Error())}
	}
	return nil
}

// summarizeMirrors picks the reason to report for failed clusters, by
// severity, and lists every cluster in the message.
func summarizeMirrors(results []clusterResult) (string, string) {
	rank := map[string]int{
		c5c3v1alpha1.NovaComputeConfigErrorReason:       0,
		c5c3v1alpha1.ComputeCredentialsErrorReason:      1,
		c5c3v1alpha1.HypervisorOperatorErrorReason:      2,
		c5c3v1alpha1.NovaMetadataAgentSecretErrorReason: 3,
		anvilmeta.TargetClusterUnavailableReason:        4,
	}
	reason := results[0].reason
	var msgs []string
	for _, res := range results {
		if rank[res.reason] < rank[reason] {
			reason = res.reason
		}
		msgs = append(msgs, res.message)
	}
	return reason, strings.Join(msgs, "; ")
}
