package v1alpha1

import (
	"testing"

	anvilmeta "github.com/anvil/anvil/api/meta"
)

// An object the apiserver did not default resolves to the documented
// defaults, and the two databases get different node ports.
func TestResolvedDefaults(t *testing.T) {
	c := &OVNCentral{}
	if got := c.ResolvedImage(); got != "ghcr.io/c5c3/ovn:26.03.2" {
		t.Errorf("image = %q", got)
	}
	if nb, sb := c.Spec.NorthboundNodePortBase(), c.Spec.SouthboundNodePortBase(); nb != 30641 || sb != 30651 {
		t.Errorf("node port bases = %d, %d", nb, sb)
	}
	db := c.Spec.Northbound
	if db.ResolvedReplicas() != 3 || db.ResolvedElectionTimerMs() != 1000 || db.ResolvedInactivityProbeMs() != 60000 || db.ResolvedStorageSize() != "1Gi" {
		t.Errorf("database defaults = %d %d %d %s", db.ResolvedReplicas(), db.ResolvedElectionTimerMs(), db.ResolvedInactivityProbeMs(), db.ResolvedStorageSize())
	}
	if n := c.Spec.Northd; n.ResolvedReplicas() != 3 || n.ResolvedThreads() != 1 {
		t.Errorf("northd defaults = %d %d", n.ResolvedReplicas(), n.ResolvedThreads())
	}
	if k := (IssuerReference{Name: "ca"}).ResolvedKind(); k != ClusterIssuerKind {
		t.Errorf("issuer kind = %q", k)
	}
	r := &OVNRelaySpec{}
	if r.ResolvedReplicas() != 1 || r.ResolvedNodePort() != 30661 {
		t.Errorf("relay defaults = %d %d", r.ResolvedReplicas(), r.ResolvedNodePort())
	}

	ch := &OVNChassis{}
	s := &ch.Spec
	if ch.ResolvedImage() != c.ResolvedImage() || s.ResolvedEncapType() != EncapGeneve || s.ResolvedRemoteProbeIntervalMs() != 60000 ||
		s.ResolvedRevalidatorThreads() != 2 || s.UpdateStrategy.ResolvedType() != RollingUpdateStrategy || s.UpdateStrategy.ResolvedMaxUnavailable() != 1 {
		t.Errorf("chassis defaults = %+v", s)
	}
	s.Image = &anvilmeta.ImageSpec{Repository: "registry.example.com/ovn", Digest: "sha256:abc"}
	if got := ch.ResolvedImage(); got != "registry.example.com/ovn@sha256:abc" {
		t.Errorf("pinned image = %q", got)
	}
}

// A nil backup block still resolves to a full CronJob spec, and resolving
// never writes into the spec.
func TestResolvedBackup(t *testing.T) {
	spec := &OVNCentralSpec{}
	b := spec.ResolvedBackup()
	if b.Schedule != "0 2 * * *" || *b.RetentionDays != 14 || b.Suspend || b.Storage.Size != "5Gi" {
		t.Errorf("nil block resolved to %+v / %+v", b, b.Storage)
	}

	spec.Backup = &OVNBackupSpec{Schedule: "30 3 * * 0", Suspend: true, Storage: &BackupStorageSpec{StorageClassName: "fast"}}
	b = spec.ResolvedBackup()
	if b.Schedule != "30 3 * * 0" || *b.RetentionDays != 14 || !b.Suspend || b.Storage.Size != "5Gi" || b.Storage.StorageClassName != "fast" {
		t.Errorf("partial block resolved to %+v / %+v", b, b.Storage)
	}
	b.Storage.Size = "9Gi"
	if spec.Backup.Storage.Size != "" || spec.Backup.RetentionDays != nil {
		t.Errorf("resolving wrote into the spec: %+v", spec.Backup)
	}
}
