package v1alpha1

import anvilmeta "github.com/anvil/anvil/api/meta"

// Defaults that are resolved on every pass instead of written by the
// apiserver: the image, so that a new Anvil release moves every object that
// did not pin one; the node ports, because the two databases differ; and the
// values of optional blocks, which the apiserver defaults only when the
// block is present. The schema's own defaults are repeated here for readers
// of an object the apiserver did not default, such as one built in a test.
const (
	// DefaultImageRepository is the OVN image's repository.
	DefaultImageRepository = "ghcr.io/c5c3/ovn"
	// DefaultImageTag is the OVN image's tag.
	DefaultImageTag = "26.03.2"

	// DefaultNorthdReplicas is spec.northd.replicas' default.
	DefaultNorthdReplicas int32 = 3
	// DefaultNorthdThreads is spec.northd.threads' default.
	DefaultNorthdThreads int32 = 1

	// DefaultDatabaseReplicas is spec.<db>.replicas' default.
	DefaultDatabaseReplicas int32 = 3
	// DefaultDatabaseStorageSize is spec.<db>.storage.size's default.
	DefaultDatabaseStorageSize = "1Gi"
	// DefaultElectionTimerMs is spec.<db>.electionTimerMs' default.
	DefaultElectionTimerMs int32 = 1000
	// DefaultInactivityProbeMs is spec.<db>.inactivityProbeMs' default.
	DefaultInactivityProbeMs int32 = 60000
	// DefaultNorthboundNodePortBase is the node port of northbound member 0.
	DefaultNorthboundNodePortBase int32 = 30641
	// DefaultSouthboundNodePortBase is the node port of southbound member 0.
	DefaultSouthboundNodePortBase int32 = 30651

	// DefaultRelayReplicas is spec.relay.replicas' default.
	DefaultRelayReplicas int32 = 1
	// DefaultRelayNodePort is the relay's node port.
	DefaultRelayNodePort int32 = 30661

	// DefaultBackupSchedule is spec.backup.schedule's default: daily at 02:00.
	DefaultBackupSchedule = "0 2 * * *"
	// DefaultBackupRetentionDays is spec.backup.retentionDays' default.
	DefaultBackupRetentionDays int32 = 14
	// DefaultBackupStorageSize is spec.backup.storage.size's default.
	DefaultBackupStorageSize = "5Gi"

	// DefaultRemoteProbeIntervalMs is spec.remoteProbeIntervalMs' default.
	DefaultRemoteProbeIntervalMs int32 = 60000
	// DefaultRevalidatorThreads is spec.ovs.revalidatorThreads' default.
	DefaultRevalidatorThreads int32 = 2
	// DefaultMaxUnavailable is spec.updateStrategy.maxUnavailable's default.
	DefaultMaxUnavailable int32 = 1
)

// NodePortMin and NodePortMax bound the node ports a central may use: the
// apiserver's default service node port range.
const (
	// NodePortMin is the lowest node port.
	NodePortMin int32 = 30000
	// NodePortMax is the highest node port.
	NodePortMax int32 = 32767
)

// DefaultImage is the image a central or chassis without spec.image runs.
func DefaultImage() anvilmeta.ImageSpec {
	return anvilmeta.ImageSpec{Repository: DefaultImageRepository, Tag: DefaultImageTag}
}

// ResolveImage returns img, or DefaultImage when img is nil.
func ResolveImage(img *anvilmeta.ImageSpec) anvilmeta.ImageSpec {
	if img == nil {
		return DefaultImage()
	}
	return *img
}

// orDefault returns *v, or def when v is nil.
func orDefault[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

// orDefaultString returns s, or def when s is empty.
func orDefaultString(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ResolvedImage is the central's image reference, repository:tag or
// repository@digest.
func (o *OVNCentral) ResolvedImage() string {
	return ResolveImage(o.Spec.Image).Reference()
}

// ResolvedReplicas is northd's replica count.
func (n NorthdSpec) ResolvedReplicas() int32 { return orDefault(n.Replicas, DefaultNorthdReplicas) }

// ResolvedThreads is northd's thread count.
func (n NorthdSpec) ResolvedThreads() int32 { return orDefault(n.Threads, DefaultNorthdThreads) }

// ResolvedKind is the issuer's kind, ClusterIssuer when unset.
func (r IssuerReference) ResolvedKind() string { return orDefaultString(r.Kind, ClusterIssuerKind) }

// OwnCAName is the central's own CA when spec.tls.issuerRef is unset: its
// Certificate, Secret and CA Issuer, {central}-ca.
func (o *OVNCentral) OwnCAName() string { return o.Name + "-ca" }

// LeafIssuer is the issuer of every certificate the central's trust
// covers, its own and the chassis identities: the one spec.tls.issuerRef
// names, else the central's own CA Issuer.
func (o *OVNCentral) LeafIssuer() IssuerReference {
	if ref := o.Spec.TLS.IssuerRef; ref != nil {
		return IssuerReference{Name: ref.Name, Kind: ref.ResolvedKind()}
	}
	return IssuerReference{Name: o.OwnCAName(), Kind: IssuerKind}
}

// ResolvedReplicas is the database's Raft member count.
func (d OVNDatabaseSpec) ResolvedReplicas() int32 {
	return orDefault(d.Replicas, DefaultDatabaseReplicas)
}

// ResolvedStorageSize is the size of each member's claim.
func (d OVNDatabaseSpec) ResolvedStorageSize() string {
	return orDefaultString(d.Storage.Size, DefaultDatabaseStorageSize)
}

// ResolvedElectionTimerMs is the Raft election timer.
func (d OVNDatabaseSpec) ResolvedElectionTimerMs() int32 {
	return orDefault(d.ElectionTimerMs, DefaultElectionTimerMs)
}

// ResolvedInactivityProbeMs is the client inactivity probe.
func (d OVNDatabaseSpec) ResolvedInactivityProbeMs() int32 {
	return orDefault(d.InactivityProbeMs, DefaultInactivityProbeMs)
}

// NorthboundNodePortBase is the node port of northbound member 0.
func (s *OVNCentralSpec) NorthboundNodePortBase() int32 {
	return orDefault(s.Northbound.NodePortBase, DefaultNorthboundNodePortBase)
}

// SouthboundNodePortBase is the node port of southbound member 0.
func (s *OVNCentralSpec) SouthboundNodePortBase() int32 {
	return orDefault(s.Southbound.NodePortBase, DefaultSouthboundNodePortBase)
}

// ResolvedReplicas is the relay's pod count.
func (r *OVNRelaySpec) ResolvedReplicas() int32 { return orDefault(r.Replicas, DefaultRelayReplicas) }

// ResolvedNodePort is the relay's node port.
func (r *OVNRelaySpec) ResolvedNodePort() int32 { return orDefault(r.NodePort, DefaultRelayNodePort) }

// ResolvedBackup is spec.backup with every default filled in. A nil block
// resolves to the defaults, because a central always has a backup CronJob.
func (s *OVNCentralSpec) ResolvedBackup() OVNBackupSpec {
	var b OVNBackupSpec
	var storage BackupStorageSpec
	if s.Backup != nil {
		b = *s.Backup
		if b.Storage != nil {
			storage = *b.Storage
		}
	}
	// Every pointer is fresh, so the caller may change the result without
	// touching the spec.
	b.Schedule = orDefaultString(b.Schedule, DefaultBackupSchedule)
	b.RetentionDays = new(orDefault(b.RetentionDays, DefaultBackupRetentionDays))
	storage.Size = orDefaultString(storage.Size, DefaultBackupStorageSize)
	b.Storage = &storage
	return b
}

// ResolvedImage is the chassis's image reference, repository:tag or
// repository@digest.
func (o *OVNChassis) ResolvedImage() string {
	return ResolveImage(o.Spec.Image).Reference()
}

// ResolvedEncapType is the chassis's tunnel encapsulation.
func (s *OVNChassisSpec) ResolvedEncapType() string {
	return orDefaultString(s.EncapType, EncapGeneve)
}

// ResolvedRemoteProbeIntervalMs is ovn-controller's southbound probe.
func (s *OVNChassisSpec) ResolvedRemoteProbeIntervalMs() int32 {
	return orDefault(s.RemoteProbeIntervalMs, DefaultRemoteProbeIntervalMs)
}

// ResolvedRevalidatorThreads is ovs-vswitchd's revalidator thread count.
func (s *OVNChassisSpec) ResolvedRevalidatorThreads() int32 {
	return orDefault(s.OVS.RevalidatorThreads, DefaultRevalidatorThreads)
}

// ResolvedType is the DaemonSets' update strategy type.
func (u ChassisUpdateStrategy) ResolvedType() string {
	return orDefaultString(u.Type, RollingUpdateStrategy)
}

// ResolvedMaxUnavailable is RollingUpdate's maxUnavailable; it has no
// meaning for OnDelete.
func (u ChassisUpdateStrategy) ResolvedMaxUnavailable() int32 {
	return orDefault(u.MaxUnavailable, DefaultMaxUnavailable)
}
