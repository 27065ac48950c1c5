package webhook

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// validCentral is a central with every block set to a value the rules
// admit, as the apiserver stores it after defaulting, so that each case
// breaks exactly one thing.
func validCentral() *ovnv1alpha1.OVNCentral {
	c := &ovnv1alpha1.OVNCentral{}
	c.Name, c.Namespace = "ovn", "openstack"
	c.Spec.Image = &anvilmeta.ImageSpec{Repository: "ghcr.io/c5c3/ovn", Tag: "26.03.2"}
	c.Spec.Northd = ovnv1alpha1.NorthdSpec{Replicas: ptr.To[int32](3), Threads: ptr.To[int32](4)}
	c.Spec.TLS.IssuerRef = &ovnv1alpha1.IssuerReference{Name: "ovn-ca", Kind: ovnv1alpha1.IssuerKind}
	c.Spec.Backup = &ovnv1alpha1.OVNBackupSpec{Schedule: "15 3 * * mon-fri", RetentionDays: ptr.To[int32](7),
		Storage: &ovnv1alpha1.BackupStorageSpec{Size: "10Gi", StorageClassName: "standard"}}
	db := func(base int32) ovnv1alpha1.OVNDatabaseSpec {
		return ovnv1alpha1.OVNDatabaseSpec{Replicas: ptr.To[int32](3), Storage: ovnv1alpha1.DatabaseStorageSpec{Size: "1Gi"},
			ElectionTimerMs: ptr.To[int32](5000), ExternallyReachable: true, NodePortBase: ptr.To(base), InactivityProbeMs: ptr.To[int32](60000)}
	}
	c.Spec.Northbound, c.Spec.Southbound = db(30641), db(30651)
	c.Spec.Relay = &ovnv1alpha1.OVNRelaySpec{Replicas: ptr.To[int32](2), ExternallyReachable: true, NodePort: ptr.To[int32](30661)}
	c.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "compute-a"}
	return c
}

// TestValidateOVNCentral has one case per admission rule of a central, on
// create.
func TestValidateOVNCentral(t *testing.T) {
	nb := "spec.northbound."
	tests := []struct {
		name   string
		mutate func(*ovnv1alpha1.OVNCentral)
		want   []want // nil: admitted
	}{
		{name: "every block set", mutate: func(*ovnv1alpha1.OVNCentral) {}},
		{name: "nothing set", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec = ovnv1alpha1.OVNCentralSpec{} }},
		{name: "only an issuer's name", mutate: func(c *ovnv1alpha1.OVNCentral) {
			c.Spec = ovnv1alpha1.OVNCentralSpec{TLS: ovnv1alpha1.OVNTLSSpec{IssuerRef: &ovnv1alpha1.IssuerReference{Name: "ovn-ca"}}}
		}},
		{name: "name of 45 characters", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Name = strings.Repeat("a", 45) }},
		{name: "name of 46 characters", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Name = strings.Repeat("a", 46) },
			want: []want{{"metadata.name", field.ErrorTypeInvalid, "name must be at most 45 characters: the backup CronJob {name}-backup may have at most 52"}}},
		{name: "image with tag and digest", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Image.Digest = "sha256:" + strings.Repeat("0", 64) },
			want: []want{{"spec.image", field.ErrorTypeInvalid, msgTagXorDigest}}},
		{name: "image without repository", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Image.Repository = "" },
			want: []want{{"spec.image.repository", field.ErrorTypeRequired, msgRepository}}},
		{name: "northd without replicas", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northd.Replicas = ptr.To[int32](0) },
			want: []want{{"spec.northd.replicas", field.ErrorTypeInvalid, "must be at least 1"}}},
		{name: "northd with 17 threads", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northd.Threads = ptr.To[int32](17) },
			want: []want{{"spec.northd.threads", field.ErrorTypeInvalid, "must be between 1 and 16"}}},
		{name: "issuer without name", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.TLS.IssuerRef.Name = "" },
			want: []want{{"spec.tls.issuerRef.name", field.ErrorTypeRequired, msgIssuerName}}},
		{name: "issuer of another kind", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.TLS.IssuerRef.Kind = "Vault" },
			want: []want{{"spec.tls.issuerRef.kind", field.ErrorTypeNotSupported, ""}}},
		{name: "schedule that does not parse", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.Schedule = "0 25 * * *" },
			want: []want{{"spec.backup.schedule", field.ErrorTypeInvalid, `is not a valid cron schedule: hour field "25": 25 is outside 0-23`}}},
		{name: "retention of zero days", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.RetentionDays = ptr.To[int32](0) },
			want: []want{{"spec.backup.retentionDays", field.ErrorTypeInvalid, msgRetention}}},
		{name: "backup size in bytes", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.Storage.Size = "1000000" },
			want: []want{{"spec.backup.storage.size", field.ErrorTypeInvalid, msgStorageSize}}},
		{name: "even replicas", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.Replicas = ptr.To[int32](2) },
			want: []want{{nb + "replicas", field.ErrorTypeInvalid, "replicas must be odd"}}},
		{name: "seven replicas", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Southbound.Replicas = ptr.To[int32](7) },
			want: []want{{"spec.southbound.replicas", field.ErrorTypeInvalid, "must be between 1 and 5"}}},
		{name: "member size in G", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.Storage.Size = "1G" },
			want: []want{{nb + "storage.size", field.ErrorTypeInvalid, msgStorageSize}}},
		{name: "election timer below 1000", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.ElectionTimerMs = ptr.To[int32](999) },
			want: []want{{nb + "electionTimerMs", field.ErrorTypeInvalid, "must be between 1000 and 180000"}}},
		{name: "negative inactivity probe", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.InactivityProbeMs = ptr.To[int32](-1) },
			want: []want{{nb + "inactivityProbeMs", field.ErrorTypeInvalid, "must be at least 0"}}},
		{name: "node port base below the node port range", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.NodePortBase = ptr.To[int32](6641) },
			want: []want{{nb + "nodePortBase", field.ErrorTypeInvalid, "must be between 30000 and 32767"}}},
		{name: "node port base without room", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Southbound.NodePortBase = ptr.To[int32](32766) },
			want: []want{{"spec.southbound.nodePortBase", field.ErrorTypeInvalid, "nodePortBase 32766 leaves no room for 3 replicas below 32768"}}},
		{name: "database node ports overlap", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Southbound.NodePortBase = ptr.To[int32](30643) },
			want: []want{{"spec.southbound.nodePortBase", field.ErrorTypeInvalid, msgNodePortsOverlap}}},
		{name: "default southbound ports overlap a moved northbound", mutate: func(c *ovnv1alpha1.OVNCentral) {
			c.Spec.Northbound.NodePortBase, c.Spec.Southbound.NodePortBase = ptr.To[int32](30649), nil
		}, want: []want{{"spec.southbound.nodePortBase", field.ErrorTypeInvalid, msgNodePortsOverlap}}},
		{name: "relay without replicas", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay.Replicas = ptr.To[int32](0) },
			want: []want{{"spec.relay.replicas", field.ErrorTypeInvalid, "must be at least 1"}}},
		{name: "relay node port without externallyReachable", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay.ExternallyReachable = false },
			want: []want{{"spec.relay.nodePort", field.ErrorTypeForbidden, msgRelayNodePortExternal}}},
		{name: "relay node port below the node port range", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay.NodePort = ptr.To[int32](29999) },
			want: []want{{"spec.relay.nodePort", field.ErrorTypeInvalid, "must be between 30000 and 32767"}}},
		{name: "relay node port inside the southbound members", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Relay.NodePort = ptr.To[int32](30652) },
			want: []want{{"spec.relay.nodePort", field.ErrorTypeInvalid, "nodePort 30652 falls inside the southbound member node ports 30651-30653"}}},
		{name: "default relay node port inside moved northbound members", mutate: func(c *ovnv1alpha1.OVNCentral) {
			c.Spec.Relay.NodePort, c.Spec.Northbound.NodePortBase = nil, ptr.To[int32](30660)
		}, want: []want{{"spec.relay.nodePort", field.ErrorTypeInvalid, "nodePort 30661 falls inside the northbound member node ports 30660-30662"}}},
		{name: "empty target cluster name", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.TargetClusterRef.Name = "" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeRequired, msgTargetName}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validCentral()
			tt.mutate(c)
			assertErrors(t, ValidateOVNCentral(c, nil), tt.want)
		})
	}
}

// TestValidateOVNCentralUpdate has one case per rule that compares with the
// stored central.
func TestValidateOVNCentralUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*ovnv1alpha1.OVNCentral)
		mutate func(*ovnv1alpha1.OVNCentral)
		want   []want
	}{
		{name: "mutable fields change", mutate: func(c *ovnv1alpha1.OVNCentral) {
			c.Spec.Northbound.ExternallyReachable = false
			c.Spec.Northbound.NodePortBase = ptr.To[int32](31000)
			c.Spec.Northbound.InactivityProbeMs = ptr.To[int32](0)
			c.Spec.Relay = nil
			c.Spec.Backup.Suspend = true
		}},
		{name: "replicas changed", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Southbound.Replicas = ptr.To[int32](5) },
			want: []want{{"spec.southbound.replicas", field.ErrorTypeInvalid, msgReplicasImmutable}}},
		{name: "storage changed", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.Storage.StorageClassName = "fast" },
			want: []want{{"spec.northbound.storage", field.ErrorTypeInvalid, msgStorageImmutable}}},
		{name: "election timer changed", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Northbound.ElectionTimerMs = ptr.To[int32](10000) },
			want: []want{{"spec.northbound.electionTimerMs", field.ErrorTypeInvalid, msgElectionTimerImmutable}}},
		{name: "fields the stored central lacks may be set", old: func(c *ovnv1alpha1.OVNCentral) {
			c.Spec.Northbound.Replicas, c.Spec.Northbound.ElectionTimerMs = nil, nil
			c.Spec.Northbound.Storage = ovnv1alpha1.DatabaseStorageSpec{}
		}, mutate: func(*ovnv1alpha1.OVNCentral) {}},
		{name: "targetClusterRef changed", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.TargetClusterRef.Name = "compute-b" },
			want: []want{{"spec.targetClusterRef.name", field.ErrorTypeInvalid, msgTargetImmutable}}},
		{name: "targetClusterRef removed", mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.TargetClusterRef = nil },
			want: []want{{"spec.targetClusterRef", field.ErrorTypeForbidden, msgTargetImmutable}}},
		{name: "an over-long name is not refused again", old: func(c *ovnv1alpha1.OVNCentral) { c.Name = strings.Repeat("a", 46) },
			mutate: func(c *ovnv1alpha1.OVNCentral) { c.Name = strings.Repeat("a", 46) }},
		{name: "a deleting central with an unchanged invalid spec", old: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.Schedule = "never" },
			mutate: func(c *ovnv1alpha1.OVNCentral) {
				c.Spec.Backup.Schedule = "never"
				c.DeletionTimestamp = &metav1.Time{}
			}},
		{name: "a live central with an unchanged invalid spec", old: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.Schedule = "never" },
			mutate: func(c *ovnv1alpha1.OVNCentral) { c.Spec.Backup.Schedule = "never" },
			want:   []want{{"spec.backup.schedule", field.ErrorTypeInvalid, "is not a valid cron schedule"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := validCentral()
			if tt.old != nil {
				tt.old(old)
			}
			c := validCentral()
			tt.mutate(c)
			assertErrors(t, ValidateOVNCentral(c, old), tt.want)
		})
	}
}

// A shorter retention is admitted with a warning; a longer one, or a
// removed block that resolves to a longer default, without.
func TestOVNCentralRetentionWarnings(t *testing.T) {
	old := validCentral() // 7 days
	c := validCentral()
	c.Spec.Backup.RetentionDays = ptr.To[int32](3)
	if w := OVNCentralWarnings(c, old); len(w) != 1 || w[0] != "spec.backup.retentionDays shortened from 7 to 3: the next backup run deletes the backups older than that" {
		t.Errorf("shortened: warnings %q", w)
	}
	c.Spec.Backup = nil
	if w := OVNCentralWarnings(c, old); w != nil {
		t.Errorf("lengthened to the default: warnings %q", w)
	}
	if w := OVNCentralWarnings(c, nil); w != nil {
		t.Errorf("create: warnings %q", w)
	}
}

// Naming a ClusterIssuer, on create or by changing the reference, is
// admitted with a warning that the trust is shared; an Issuer of the
// central's namespace, no issuer, and an unchanged reference are not.
func TestOVNCentralSharedTrustWarnings(t *testing.T) {
	shared := "spec.tls.issuerRef names ClusterIssuer fleet-ca: the databases then accept the keys of every central and client that issuer signs for, in any namespace; leave issuerRef unset for a CA of this central's own"
	withRef := func(ref *ovnv1alpha1.IssuerReference) *ovnv1alpha1.OVNCentral {
		c := validCentral()
		c.Spec.TLS.IssuerRef = ref
		return c
	}
	cluster := &ovnv1alpha1.IssuerReference{Name: "fleet-ca", Kind: ovnv1alpha1.ClusterIssuerKind}
	defaulted := &ovnv1alpha1.IssuerReference{Name: "fleet-ca"}
	namespaced := &ovnv1alpha1.IssuerReference{Name: "fleet-ca", Kind: ovnv1alpha1.IssuerKind}
	tests := []struct {
		name     string
		c, old   *ovnv1alpha1.OVNCentral
		warnings []string
	}{
		{"create naming a ClusterIssuer", withRef(cluster), nil, []string{shared}},
		{"create with the kind left to its default", withRef(defaulted), nil, []string{shared}},
		{"create naming an Issuer", withRef(namespaced), nil, nil},
		{"create with the central's own CA", withRef(nil), nil, nil},
		{"own CA to a ClusterIssuer", withRef(cluster), withRef(nil), []string{shared}},
		{"an Issuer to a ClusterIssuer of the same name", withRef(cluster), withRef(namespaced), []string{shared}},
		{"an unchanged ClusterIssuer", withRef(cluster), withRef(cluster), nil},
		{"a ClusterIssuer to the own CA", withRef(nil), withRef(cluster), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := OVNCentralWarnings(tt.c, tt.old)
			if !slices.Equal(w, tt.warnings) {
				t.Errorf("warnings %q, want %q", w, tt.warnings)
			}
		})
	}
}
