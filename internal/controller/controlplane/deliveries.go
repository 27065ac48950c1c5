package controlplane

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
)

// A ControlPlane keeps an inventory of every copy it wrote to a compute
// cluster in status.deliveries. A pass records what it wants on each
// cluster (wantCopy) and each copy it wrote (recordDelivery); the copies
// of the inventory it no longer wants are deleted by withdrawDeliveries.
// The ControlPlane is the only one that deletes what it delivered: a pool
// or an agent going away only changes what the next pass wants.

// copyKey names one delivered copy.
type copyKey struct{ cluster, namespace, name string }

// keyOf is the key of an inventory entry.
func keyOf(d c5c3v1alpha1.DeliveredCopy) copyKey {
	return copyKey{d.Cluster, d.Namespace, d.Name}
}

// wantCopy records that this pass delivers the copy name to cluster, in
// the ControlPlane's namespace, or means to and could not: a copy the pass
// could not write this time stays as it was.
func (p *pass) wantCopy(cluster, name string) {
	if p.wanted == nil {
		p.wanted = map[copyKey]bool{}
	}
	p.wanted[copyKey{cluster, p.cp.Namespace, name}] = true
}

// RecordDelivery returns the inventory with the copy s, just written to
// cluster, in it, under the hash of its data. The list stays sorted by
// cluster, namespace and name, so a settled inventory never moves. It is
// pure.
func RecordDelivery(list []c5c3v1alpha1.DeliveredCopy, cluster string, s *corev1.Secret) []c5c3v1alpha1.DeliveredCopy {
	entry := c5c3v1alpha1.DeliveredCopy{Cluster: cluster, Kind: "Secret", Namespace: s.Namespace, Name: s.Name, Hash: novaconfig.Hash(s.Data)}
	i, found := slices.BinarySearchFunc(list, keyOf(entry), compareKey)
	if found {
		list[i] = entry
		return list
	}
	return slices.Insert(list, i, entry)
}

// compareKey orders inventory entries by cluster, namespace and name.
func compareKey(d c5c3v1alpha1.DeliveredCopy, k copyKey) int {
	return cmpStrings(d.Cluster, k.cluster, d.Namespace, k.namespace, d.Name, k.name)
}

// cmpStrings compares pairs in order until one differs.
func cmpStrings(pairs ...string) int {
	for i := 0; i+1 < len(pairs); i += 2 {
		if c := strings.Compare(pairs[i], pairs[i+1]); c != 0 {
			return c
		}
	}
	return 0
}

// StaleDeliveries returns the entries of the inventory that a pass which
// wants the copies in wanted no longer delivers. It is pure.
func StaleDeliveries(list []c5c3v1alpha1.DeliveredCopy, wanted map[copyKey]bool) []c5c3v1alpha1.DeliveredCopy {
	var stale []c5c3v1alpha1.DeliveredCopy
	for _, d := range list {
		if !wanted[keyOf(d)] {
			stale = append(stale, d)
		}
	}
	return stale
}

// forgetDelivery drops the entry of key from the inventory.
func forgetDelivery(list []c5c3v1alpha1.DeliveredCopy, key copyKey) []c5c3v1alpha1.DeliveredCopy {
	return slices.DeleteFunc(list, func(d c5c3v1alpha1.DeliveredCopy) bool { return keyOf(d) == key })
}

// withdrawDeliveries deletes every copy of the inventory this pass does
// not deliver. The copies of a cluster that cannot be reached stay listed
// and are reported, so that the pass waits and tries again; the other
// clusters' copies go meanwhile. It runs after every step that delivers.
func (r *Reconciler) withdrawDeliveries(ctx context.Context, p *pass) (flow.Outcome, error) {
	return flow.Continue, r.withdraw(ctx, p, StaleDeliveries(p.cp.Status.Deliveries, p.wanted))
}

// withdraw deletes the given copies. A failure to reach a cluster is
// noted for reportDeliveries; any other failure is returned.
func (r *Reconciler) withdraw(ctx context.Context, p *pass, stale []c5c3v1alpha1.DeliveredCopy) error {
	var failed []error
	for _, d := range stale {
		deleted, unavailable, err := r.deleteDelivered(ctx, p, d)
		switch {
		case unavailable != nil:
			p.failures = append(p.failures, *unavailable)
			continue
		case err != nil:
			failed = append(failed, err)
			continue
		}
		p.cp.Status.Deliveries = forgetDelivery(p.cp.Status.Deliveries, keyOf(d))
		if deleted {
			reason, why := r.withdrawalReason(p, d)
			r.Recorder.Eventf(p.cp, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: d.Namespace, Name: d.Name},
				corev1.EventTypeNormal, reason, "Delete", "deleted the delivered copy %s/%s on %s: %s", d.Namespace, d.Name, d.Cluster, why)
		}
	}
	return errors.Join(failed...)
}

// deleteDelivered deletes one listed copy, only if it still carries its
// copy label and this ControlPlane's ownership labels. It reports whether
// it deleted. A cluster that is no longer registered cannot be reached
// again: its copy is forgotten with a Warning naming it. One that is
// registered but cannot be used is reported as a *clusterResult.
func (r *Reconciler) deleteDelivered(ctx context.Context, p *pass, d c5c3v1alpha1.DeliveredCopy) (bool, *clusterResult, error) {
	children, err := r.Registry.WriterFor(d.Cluster, nil)
	if err != nil {
		registered, lerr := r.Registry.Registered(ctx, p.cp.Namespace)
		if lerr != nil {
			return false, nil, lerr
		}
		if slices.Contains(registered, d.Cluster) {
			return false, &clusterResult{d.Cluster, anvilmeta.TargetClusterUnavailableReason,
				fmt.Sprintf("waiting to delete Secret %s/%s from %s: %s", d.Namespace, d.Name, d.Cluster, err.Error())}, nil
		}
		r.Recorder.Eventf(p.cp, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: d.Namespace, Name: d.Name},
			corev1.EventTypeWarning, c5c3v1alpha1.DeliveredCopyAbandonedEvent, "Delete",
			"cluster %s is no longer registered; the copy %s/%s there, if it is still there, is left for the cluster's owner to delete", d.Cluster, d.Namespace, d.Name)
		return false, nil, nil
	}
	label := copyLabel(p.cp, d.Name)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name}}
	deleted, err := children.DeleteIf(ctx, secret, func(live client.Object) bool {
		return label != "" && live.GetLabels()[label] == "true" && childwriter.Controls(p.cp, live, r.Scheme)
	})
	if err != nil {
		return false, nil, fmt.Errorf("on %s: deleting Secret %s/%s: %w", d.Cluster, d.Namespace, d.Name, err)
	}
	return deleted, nil, nil
}

// copyLabel is the label that marks the copy name as one this ControlPlane
// delivers, or "" for a name it never delivers.
func copyLabel(cp *c5c3v1alpha1.ControlPlane, name string) string {
	for _, c := range deliveredCopies(cp) {
		if c.name == name {
			return c.label
		}
	}
	return ""
}

// withdrawalReason is the event reason and the note of a copy the pass
// deleted: the metadata copy when no agent names it; the auth copy on a
// cluster that still gets the contract when its namespace or the
// ControlPlane no longer asks for it; otherwise the cluster has no pool
// of the Nova left.
func (r *Reconciler) withdrawalReason(p *pass, d c5c3v1alpha1.DeliveredCopy) (string, string) {
	switch {
	case d.Name == MetadataAgentSecretName(p.cp):
		return c5c3v1alpha1.MetadataSharedSecretMirrorReapedEvent, "no metadata agent there names it"
	case d.Name == HypervisorOperatorAuthName(p.cp) && p.hvoAuth == nil:
		return c5c3v1alpha1.HypervisorOperatorCopyWithdrawnEvent, "the hypervisor operator's account is no longer asked for"
	case d.Name == HypervisorOperatorAuthName(p.cp) && slices.Contains(p.targets, d.Cluster):
		return c5c3v1alpha1.HypervisorOperatorCopyWithdrawnEvent,
			fmt.Sprintf("namespace %s there does not carry %s=true", d.Namespace, c5c3v1alpha1.HypervisorOperatorCredentialsLabel)
	}
	return c5c3v1alpha1.ComputeConfigMirrorReapedEvent, fmt.Sprintf("no pool of Nova %s runs there", NovaName(p.cp))
}
