package novacompute

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/openstack"
	"github.com/anvil/anvil/internal/targetcluster"
)

// reconcileServices follows each node's nova-compute service in Nova: it
// promotes a Pending node once its host is mapped (running host discovery
// when it is not), disables a leaving node's service once, counts the
// servers left on it, and deletes the service of a node with none once its
// pod is gone. It never migrates a server and never enables a service.
func (r *Reconciler) reconcileServices(ctx context.Context, p *pass) (flow.Outcome, error) {
	pool := p.pool
	cloud, err := p.openCloud(ctx)
	if err != nil {
		return p.computeAPIError(novav1alpha1.ServicesReadyCondition, "authenticating as the Nova's service user", err)
	}
	svcs, err := cloud.ListComputeServices(ctx, "")
	if err != nil {
		return p.computeAPIError(novav1alpha1.ServicesReadyCondition, "listing the compute services", err)
	}
	byHost := map[string]openstack.ComputeService{}
	for _, s := range svcs {
		byHost[s.Host] = s
	}

	// The hypervisor list is read only while a node waits to be mapped.
	var mapped map[string]bool
	hostMapped := func(host string) (bool, error) {
		if mapped == nil {
			hvs, err := cloud.ListHypervisors(ctx)
			if err != nil {
				return false, err
			}
			mapped = map[string]bool{}
			for _, h := range hvs {
				host := h.ServiceHost
				if host == "" {
					host = h.Hostname
				}
				mapped[host] = true
			}
		}
		return mapped[host], nil
	}
	// Pods are listed once, and only when a node is releasing.
	var podNodes map[string]bool
	podOn := func(node string) (bool, error) {
		if podNodes == nil {
			pods := &corev1.PodList{}
			if err := p.reader().List(ctx, pods, client.InNamespace(pool.Namespace), client.MatchingLabels(PodLabels(pool.Name))); err != nil {
				return false, err
			}
			podNodes = map[string]bool{}
			for _, pod := range pods.Items {
				podNodes[pod.Spec.NodeName] = true
			}
		}
		return podNodes[node], nil
	}

	now := r.now()
	outcome := flow.Requeue(settledRequeue)
	var noService, unmapped, down, draining, failed []string
	// A call that fails for one node is reported and retried, and never
	// keeps the other nodes from their next transition.
	nodeFailed := func(what string, err error) {
		failed = append(failed, what+": "+err.Error())
		outcome = flow.Merge(outcome, flow.Requeue(apiErrorRequeue))
	}
	entries := append([]novav1alpha1.NovaComputeNode(nil), pool.Status.Nodes...)
	for _, e := range entries {
		svc, registered := byHost[e.Name]
		cur := p.entry(e.Name)
		if registered {
			cur.ServiceID, cur.ServiceStatus, cur.ServiceState, cur.DisabledReason = svc.ID, svc.Status, svc.State, svc.DisabledReason
			if cur.ServiceRegisteredAt == nil {
				t := metav1.NewTime(now)
				cur.ServiceRegisteredAt = &t
			}
		} else {
			cur.ServiceID, cur.ServiceStatus, cur.ServiceState, cur.DisabledReason = "", "", "", ""
		}
		switch e.Phase {
		case novav1alpha1.NodeActive, novav1alpha1.NodePending:
			if !registered {
				cur.Phase = novav1alpha1.NodePending
				cur.ServiceRegisteredAt = nil
				noService = append(noService, e.Name)
				outcome = flow.Merge(outcome, flow.Requeue(nodeWaitRequeue))
				continue
			}
			if e.Phase == novav1alpha1.NodePending {
				ok, err := hostMapped(e.Name)
				if err != nil {
					return p.computeAPIError(novav1alpha1.ServicesReadyCondition, "listing the hypervisors", err)
				}
				if !ok {
					unmapped = append(unmapped, e.Name)
					outcome = flow.Merge(outcome, flow.Requeue(shortRequeue))
					continue
				}
				cur.Phase = novav1alpha1.NodeActive
				r.onboarding.mapped(pool, *cur, now)
			}
			if svc.State != "up" {
				down = append(down, e.Name)
			}
		case novav1alpha1.NodeDraining:
			if !registered {
				p.dropEntry(e.Name)
				continue
			}
			if svc.Status == "enabled" {
				reason := disabledReason(pool)
				if err := cloud.DisableService(ctx, svc.ID, reason); err != nil {
					nodeFailed("disabling the service of "+e.Name, err)
					continue
				}
				cur.ServiceStatus, cur.DisabledReason = "disabled", reason
				r.event(pool, nodeRef(e.Name), false, novav1alpha1.ComputeServiceDisabledEvent, "Drain",
					"Disabled the nova-compute service of %s: %s", e.Name, reason)
			}
			n, err := cloud.CountServersOnHost(ctx, e.Name)
			if err != nil {
				nodeFailed("counting the servers on "+e.Name, err)
				continue
			}
			count := int32(n) //nolint:gosec // a host runs far fewer than 2^31 servers
			cur.Instances = &count
			if n > 0 {
				draining = append(draining, fmt.Sprintf("%s (%d instance(s))", e.Name, n))
				outcome = flow.Merge(outcome, flow.Requeue(nodeWaitRequeue))
				continue
			}
			cur.Phase, cur.Instances = novav1alpha1.NodeReleasing, nil
			outcome = flow.Merge(outcome, flow.Requeue(shortRequeue))
		case novav1alpha1.NodeReleasing:
			if !registered || p.decision.Handover[e.Name] {
				p.dropEntry(e.Name)
				continue
			}
			running, err := podOn(e.Name)
			if err != nil {
				return flow.Continue, flow.Fail(novav1alpha1.ServicesReadyCondition, novav1alpha1.PodListErrorReason, fmt.Errorf("listing the pool's pods: %w", err))
			}
			if running {
				outcome = flow.Merge(outcome, flow.Requeue(shortRequeue))
				continue
			}
			if err := cloud.DeleteService(ctx, svc.ID); err != nil {
				if openstack.IsConflict(err) {
					// Servers came back since they were counted.
					cur.Phase = novav1alpha1.NodeDraining
					outcome = flow.Merge(outcome, flow.Requeue(shortRequeue))
					continue
				}
				nodeFailed("deleting the service of "+e.Name, err)
				continue
			}
			r.event(pool, nodeRef(e.Name), false, novav1alpha1.ComputeServiceDeletedEvent, "Release",
				"Deleted the nova-compute service of %s: no server is left on it and its pod is gone", e.Name)
			p.dropEntry(e.Name)
			outcome = flow.Merge(outcome, flow.Requeue(shortRequeue))
		}
	}

	if len(failed) > 0 {
		sort.Strings(failed)
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionFalse, novav1alpha1.ComputeAPIErrorReason, strings.Join(failed, "; "))
		if len(unmapped) == 0 {
			return outcome, nil
		}
	}
	if len(unmapped) > 0 {
		state, err := r.runDiscovery(ctx, p)
		if err != nil {
			setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionFalse, novav1alpha1.HostDiscoveryErrorReason, err.Error())
			return flow.Requeue(shortRequeue), nil
		}
		if len(failed) > 0 {
			return outcome, nil
		}
		sort.Strings(unmapped)
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionFalse, novav1alpha1.WaitingForHostMappingReason,
			fmt.Sprintf("hosts not mapped into a cell yet: %s; host discovery: %s", strings.Join(unmapped, ", "), state))
		return outcome, nil
	}
	switch {
	case len(noService) > 0:
		sort.Strings(noService)
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionFalse, novav1alpha1.WaitingForServicesReason,
			"no nova-compute service registered yet for: "+strings.Join(noService, ", "))
	case len(down) > 0:
		sort.Strings(down)
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionFalse, novav1alpha1.ServicesDownReason,
			"nova-compute services down: "+strings.Join(down, ", "))
	case len(draining) > 0:
		sort.Strings(draining)
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionTrue, novav1alpha1.DrainingReason,
			"draining, waiting for their servers to go: "+strings.Join(draining, ", "))
	default:
		setCondition(pool, novav1alpha1.ServicesReadyCondition, metav1.ConditionTrue, novav1alpha1.ServicesUpReason,
			fmt.Sprintf("%d service(s) up and mapped", countPhase(pool.Status.Nodes, novav1alpha1.NodeActive)))
	}
	return outcome, nil
}

// runDiscovery drives the Nova's shared discovery Job and describes its
// state: it creates an absent Job, leaves a running one, and replaces a
// finished one 30 s after it ended, warning when it failed.
func (r *Reconciler) runDiscovery(ctx context.Context, p *pass) (string, error) {
	nova := p.nova
	if nova.Status.ManageConfigSecretRef == nil {
		return "", fmt.Errorf("host discovery needs the Nova's apiDatabase and database; Nova %s declares none, so hosts are mapped only by the scheduler's periodic discovery", nova.Name)
	}
	job := BuildDiscoverJob(nova, nova.Status.ManageConfigSecretRef.Name)
	live := &batchv1.Job{}
	err := p.novaCluster.Reader.Get(ctx, client.ObjectKeyFromObject(job), live)
	switch {
	case apierrors.IsNotFound(err):
		// A Job runs once; it is created, never updated.
		if err := p.novaCluster.Apply(ctx, r.Scheme, nova, job, targetcluster.CreateOnly); err != nil {
			return "", fmt.Errorf("creating Job %s: %w", job.Name, err)
		}
		r.event(p.pool, nil, false, novav1alpha1.HostDiscoveryStartedEvent, "Discover", "Started Job %s/%s to map new hosts into their cell", job.Namespace, job.Name)
		return "Job " + job.Name + " started", nil
	case err != nil:
		return "", fmt.Errorf("reading Job %s: %w", job.Name, err)
	case !targetcluster.Controls(nova, live, r.Scheme):
		return "", fmt.Errorf("a Job %s/%s exists that is not the Nova's; rename or delete it", live.Namespace, live.Name)
	}
	done, failed, at := jobFinished(live)
	if !done {
		return "Job " + live.Name + " running", nil
	}
	result := "succeeded"
	if failed {
		result = "failed"
	}
	if r.now().Sub(at.Time) < discoveryKeep*time.Second {
		return "Job " + live.Name + " " + result, nil
	}
	if failed {
		r.event(p.pool, nil, true, novav1alpha1.HostDiscoveryFailedEvent, "Discover", "Job %s/%s failed; the next pass starts it again", live.Namespace, live.Name)
	}
	if _, err := p.novaCluster.Delete(ctx, r.Scheme, nova, live); err != nil {
		return "", fmt.Errorf("deleting the finished Job %s: %w", live.Name, err)
	}
	return "Job " + live.Name + " " + result + ", starting again", nil
}

// countPhase counts the entries in a phase.
func countPhase(nodes []novav1alpha1.NovaComputeNode, phase string) int {
	n := 0
	for _, e := range nodes {
		if e.Phase == phase {
			n++
		}
	}
	return n
}
