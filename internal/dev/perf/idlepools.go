package perf

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/novacompute"
	"github.com/anvil/anvil/internal/controller/workload"
	hypervisorv1 "github.com/anvil/anvil/internal/hypervisor/v1"
	"github.com/anvil/anvil/internal/openstack"
)

// p3ControlPlane names P3's ControlPlane; its Nova is p3ControlPlane-nova.
const p3ControlPlane = "p3idle"

// createPools creates, for each node, its Hypervisor (the hypervisor
// operator's object) and a pool of the ControlPlane's Nova that selects
// only that node and declares the run's trait.
func (s *idleStack) createPools(ctx context.Context) error {
	for i, node := range s.nodes {
		hv := &hypervisorv1.Hypervisor{ObjectMeta: metav1.ObjectMeta{Name: node}}
		if err := s.compute.Client.Create(ctx, hv); err != nil {
			return err
		}
		p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Name: s.poolName(i), Namespace: Namespace}}
		p.Spec.NovaRef.Name = p3ControlPlane + c5c3v1alpha1.NovaSuffix
		p.Spec.NodeSelector = map[string]string{poolLabel: s.poolName(i)}
		p.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: s.compute.Name}
		p.Spec.Libvirt.VirtType = "kvm"
		p.Spec.Traits = []string{s.trait()}
		if err := s.env.Management.Client.Create(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// applyTraits plays the hypervisor operator: once a pool has written its
// trait into a Hypervisor's spec, it reports the trait applied.
func (s *idleStack) applyTraits(ctx context.Context) (int, error) {
	applied := 0
	for _, node := range s.nodes {
		hv := &hypervisorv1.Hypervisor{}
		if err := s.compute.Client.Get(ctx, client.ObjectKey{Name: node}, hv); err != nil {
			return applied, err
		}
		if slices.Equal(hv.Status.Traits, hv.Spec.CustomTraits) && len(hv.Status.Traits) > 0 {
			applied++
			continue
		}
		if len(hv.Spec.CustomTraits) == 0 {
			continue
		}
		hv.Status.Traits = slices.Clone(hv.Spec.CustomTraits)
		if err := s.compute.Client.Status().Update(ctx, hv); err != nil && !apierrors.IsConflict(err) {
			return applied, err
		}
	}
	return applied, nil
}

// settledPools counts the pools that are Ready on their generation with
// their traits applied, their node Active with its service up, and their
// DaemonSet rolled out.
func (s *idleStack) settledPools(ctx context.Context) (int, error) {
	list := &novav1alpha1.NovaComputeList{}
	if err := s.env.Management.Client.List(ctx, list, client.InNamespace(Namespace)); err != nil {
		return 0, err
	}
	settled := 0
	for i := range list.Items {
		p := &list.Items[i]
		ready := apimeta.FindStatusCondition(p.Status.Conditions, anvilmeta.ReadyCondition)
		traits := apimeta.FindStatusCondition(p.Status.Conditions, novav1alpha1.TraitsReadyCondition)
		if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != p.Generation ||
			traits == nil || traits.Reason != novav1alpha1.TraitsAppliedReason ||
			len(p.Status.Nodes) != 1 || p.Status.Nodes[0].Phase != novav1alpha1.NodeActive || p.Status.Nodes[0].ServiceState != "up" {
			continue
		}
		ds := &appsv1.DaemonSet{}
		key := client.ObjectKey{Namespace: Namespace, Name: novacompute.DaemonSetName(p.Name)}
		if err := s.compute.Client.Get(ctx, key, ds); err != nil {
			continue
		}
		if done, _ := workload.DaemonSetRolledOut(ds); !done {
			continue
		}
		settled++
	}
	return settled, nil
}

// controlPlaneSettled tells whether the ControlPlane is Ready and its
// contract is mirrored onto the compute cluster.
func (s *idleStack) controlPlaneSettled(ctx context.Context) (bool, error) {
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := s.env.Management.Client.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: p3ControlPlane}, cp); err != nil {
		return false, err
	}
	if !apimeta.IsStatusConditionTrue(cp.Status.Conditions, anvilmeta.ReadyCondition) {
		return false, nil
	}
	mirror := &corev1.Secret{}
	key := client.ObjectKey{Namespace: Namespace, Name: p3ControlPlane + c5c3v1alpha1.NovaSuffix + novav1alpha1.ComputeConfigSuffix}
	if err := s.compute.Client.Get(ctx, key, mirror); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return mirror.Labels[c5c3v1alpha1.ComputeConfigMirrorLabel] == "true", nil
}

// waitSettledPools applies traits as they are written and waits until
// every pool and the ControlPlane have settled, reporting progress each
// 30 s. An apiserver error is retried: on a loaded machine a request may
// time out while the system still converges.
func (s *idleStack) waitSettledPools(ctx context.Context, timeout time.Duration, progress func(format string, args ...any)) error {
	lastReport := time.Now()
	var lastErr error
	err := poll(ctx, timeout, "every P3 pool settled", func(ctx context.Context) (bool, error) {
		applied, settled, cpOK, err := s.settleStep(ctx)
		if err != nil {
			lastErr = err
		}
		if time.Since(lastReport) > 30*time.Second {
			lastReport = time.Now()
			progress("P3: %d/%d pools settled, %d traits applied, ControlPlane settled %t", settled, len(s.nodes), applied, cpOK)
		}
		return err == nil && settled == len(s.nodes) && cpOK, nil
	})
	if err != nil && lastErr != nil {
		return fmt.Errorf("%w; last error: %w", err, lastErr)
	}
	return err
}

// settleStep is one round of waitSettledPools.
func (s *idleStack) settleStep(ctx context.Context) (applied, settled int, cpOK bool, err error) {
	if applied, err = s.applyTraits(ctx); err != nil {
		return applied, 0, false, err
	}
	if settled, err = s.settledPools(ctx); err != nil {
		return applied, settled, false, err
	}
	cpOK, err = s.controlPlaneSettled(ctx)
	return applied, settled, cpOK, err
}

// tearDown deletes the pools, which reaps their Nova services and
// aggregates, then the Hypervisors and the ControlPlane; after the pod
// runners stopped it deletes what is left in Nova and the trait, so that a
// later run or test starts clean. It reports failures and goes on.
func (s *idleStack) tearDown(ctx context.Context, progress func(format string, args ...any)) {
	// Deletes are repeated until the pools are gone: on a loaded machine
	// a request may time out.
	err := poll(ctx, 5*time.Minute, "the P3 pools deleted", func(ctx context.Context) (bool, error) {
		list := &novav1alpha1.NovaComputeList{}
		if err := s.env.Management.Client.List(ctx, list, client.InNamespace(Namespace)); err != nil {
			return false, nil //nolint:nilerr // retried
		}
		for i := range list.Items {
			if p := &list.Items[i]; p.DeletionTimestamp.IsZero() {
				_ = s.env.Management.Client.Delete(ctx, p)
			}
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		progress("P3 teardown: %v", err)
	}
	for _, node := range s.nodes {
		_ = s.compute.Client.Delete(ctx, &hypervisorv1.Hypervisor{ObjectMeta: metav1.ObjectMeta{Name: node}})
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: p3ControlPlane, Namespace: Namespace}}
	_ = s.env.Management.Client.Delete(ctx, cp)
	s.stopRunners()
	for _, r := range s.runners {
		_ = r.Wait()
	}
	s.stopRunners = nil
	// The sweep gets time of its own, however long the deletes took.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s.sweepCloud(sctx, progress)
}

// sweepCloud deletes, as the cloud admin, every compute service, aggregate
// and trait a P3 run leaves in the shared Nova and Placement: this run's,
// after its pod runners stopped, and any an aborted run left, before the
// pools are created. Their names are P3's own (see nodeName, zoneName and
// trait).
func (s *idleStack) sweepCloud(ctx context.Context, progress func(format string, args ...any)) {
	admin, err := s.cloud.Session(ctx)
	if err != nil {
		progress("P3 sweep: authenticating as the cloud admin: %v", err)
		return
	}
	svcs, err := admin.ListComputeServices(ctx, "")
	if err != nil {
		progress("P3 sweep: listing the compute services: %v", err)
	}
	for _, svc := range svcs {
		if isP3Name(svc.Host, "hv") {
			if err := admin.DeleteService(ctx, svc.ID); err != nil && !openstack.IsNotFound(err) {
				progress("P3 sweep: deleting the service of %s: %v", svc.Host, err)
			}
		}
	}
	aggs, err := admin.ListAggregates(ctx)
	if err != nil {
		progress("P3 sweep: listing aggregates: %v", err)
	}
	for _, a := range aggs {
		if isP3Name(a.Name, "az") {
			for _, h := range a.Hosts {
				_ = admin.RemoveAggregateHost(ctx, a.ID, h)
			}
			if err := admin.DeleteAggregate(ctx, a.ID); err != nil && !openstack.IsNotFound(err) {
				progress("P3 sweep: deleting aggregate %s: %v", a.Name, err)
			}
		}
	}
	traits, err := admin.ListTraits(ctx, "CUSTOM_P3_")
	if err != nil {
		progress("P3 sweep: listing traits: %v", err)
	}
	for _, t := range traits {
		if err := admin.DeleteTrait(ctx, t); err != nil && !openstack.IsNotFound(err) {
			progress("P3 sweep: deleting trait %s: %v", t, err)
		}
	}
}

// isP3Name tells whether name is a P3 host or zone name: prefix, five
// digits of a run, then -p3-.
func isP3Name(name, prefix string) bool {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok || len(rest) < 9 {
		return false
	}
	for _, c := range rest[:5] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return strings.HasPrefix(rest[5:], "-p3-")
}
