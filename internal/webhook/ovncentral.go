package webhook

import (
	"context"
	"fmt"
	"math"
	"regexp"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
)

// Only a validating webhook is registered: every default of an OVNCentral
// is either in the CRD schema or resolved by the controller on each pass
// (the image, the node ports, a missing backup block), so the spec the user
// wrote is the spec that is stored.
//
// +kubebuilder:webhook:path=/validate-ovn-openstack-c5c3-io-v1alpha1-ovncentral,mutating=false,failurePolicy=fail,sideEffects=None,groups=ovn.openstack.c5c3.io,resources=ovncentrals,verbs=create;update,versions=v1alpha1,name=vovncentral.openstack.c5c3.io,admissionReviewVersions=v1

// Messages that are API: clients and end-to-end fixtures match on them.
// The immutability and odd-replica messages are the CRD schema's, word for
// word, so that the answer reads the same whichever layer gives it.
const (
	msgCentralNameTooLong     = "name must be at most %d characters: the backup CronJob {name}-backup may have at most 52"
	msgReplicasOdd            = "replicas must be odd"
	msgReplicasImmutable      = "replicas is immutable: Raft membership changes are not supported"
	msgStorageImmutable       = "storage is immutable: volumeClaimTemplates cannot change"
	msgElectionTimerImmutable = "electionTimerMs is immutable: it is applied when the clustered database is created"
	msgStorageSize            = "size must be a whole number of Mi, Gi or Ti, such as 1Gi"
	msgNodePortNoRoom         = "nodePortBase %d leaves no room for %d replicas below %d"
	msgNodePortsOverlap       = "northbound and southbound nodePort ranges overlap"
	msgRelayNodePortExternal  = "nodePort is only allowed with externallyReachable: a relay that is not externally reachable has no node port"
	msgRelayNodePortInRange   = "nodePort %d falls inside the %s member node ports %d-%d"
	msgIssuerName             = "tls.issuerRef.name must be set (the cert-manager issuer of the central's certificates)"
	msgRetention              = "retentionDays must be at least 1"
	msgRetentionShortened     = "spec.backup.retentionDays shortened from %d to %d: the next backup run deletes the backups older than that"
	msgSharedTrust            = "spec.tls.issuerRef names ClusterIssuer %s: the databases then accept the keys of every central and client that issuer signs for, in any namespace; leave issuerRef unset for a CA of this central's own"
	msgSchedule               = "is not a valid cron schedule: %v"
	msgBetween                = "must be between %d and %d"
	msgAtLeast                = "must be at least %d"
)

// storageSize is the schema's pattern for a claim size.
var storageSize = regexp.MustCompile(`^[0-9]+(Mi|Gi|Ti)$`)

// OVNCentralValidator checks an OVNCentral beyond its schema. It repeats
// the schema's rules, so that ValidateOVNCentral is the complete statement
// of what a central may look like and a controller can check it again.
type OVNCentralValidator struct{}

var _ admission.Validator[*ovnv1alpha1.OVNCentral] = OVNCentralValidator{}

// SetupOVNCentralWebhook registers the OVNCentral validator with the
// manager's webhook server.
func SetupOVNCentralWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &ovnv1alpha1.OVNCentral{}).WithValidator(OVNCentralValidator{}).Complete()
}

// ValidateCreate implements admission.Validator.
func (OVNCentralValidator) ValidateCreate(_ context.Context, c *ovnv1alpha1.OVNCentral) (admission.Warnings, error) {
	return OVNCentralWarnings(c, nil), ovnCentralInvalid(c, ValidateOVNCentral(c, nil))
}

// ValidateUpdate implements admission.Validator. It warns, without
// refusing, when the backup retention is shortened or the central joins a
// ClusterIssuer's trust domain.
func (OVNCentralValidator) ValidateUpdate(_ context.Context, old, c *ovnv1alpha1.OVNCentral) (admission.Warnings, error) {
	return OVNCentralWarnings(c, old), ovnCentralInvalid(c, ValidateOVNCentral(c, old))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (OVNCentralValidator) ValidateDelete(context.Context, *ovnv1alpha1.OVNCentral) (admission.Warnings, error) {
	return nil, nil
}

// ValidateOVNCentral returns every problem with an OVNCentral. old is nil
// on create; on update it is the stored object. It is pure, so the rules
// are table-tested without an apiserver.
func ValidateOVNCentral(c, old *ovnv1alpha1.OVNCentral) field.ErrorList {
	return redactUserInfo(validateOVNCentral(c, old))
}

// validateOVNCentral holds the rules of ValidateOVNCentral; the exported function redacts what
// its errors would echo.
func validateOVNCentral(c, old *ovnv1alpha1.OVNCentral) field.ErrorList {
	if old != nil && c.DeletionTimestamp != nil && equality.Semantic.DeepEqual(old.Spec, c.Spec) {
		// The teardown removes finalizers by update; a central admitted
		// under older rules must still finish it.
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old == nil && len(c.Name) > ovnv1alpha1.MaxOVNCentralNameLength {
		// Create only: a name cannot change, so an update could not fix it.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name,
			fmt.Sprintf(msgCentralNameTooLong, ovnv1alpha1.MaxOVNCentralNameLength)))
	}
	if c.Spec.Image != nil {
		errs = append(errs, validateImage(spec.Child("image"), c.Spec.Image)...)
	}
	errs = append(errs, validateNorthd(spec.Child("northd"), c.Spec.Northd)...)
	if c.Spec.TLS.IssuerRef != nil {
		errs = append(errs, validateIssuer(spec.Child("tls", "issuerRef"), *c.Spec.TLS.IssuerRef)...)
	}
	errs = append(errs, validateBackup(spec.Child("backup"), c.Spec.Backup)...)

	var oldNB, oldSB *ovnv1alpha1.OVNDatabaseSpec
	var oldRef *anvilmeta.TargetClusterRef
	if old != nil {
		oldNB, oldSB, oldRef = &old.Spec.Northbound, &old.Spec.Southbound, old.Spec.TargetClusterRef
	}
	errs = append(errs, validateDatabase(spec.Child("northbound"), c.Spec.Northbound, oldNB)...)
	errs = append(errs, validateDatabase(spec.Child("southbound"), c.Spec.Southbound, oldSB)...)
	errs = append(errs, validateNodePorts(spec, &c.Spec)...)
	errs = append(errs, validateRelay(spec.Child("relay"), &c.Spec)...)
	errs = append(errs, validateTargetRef(spec.Child("targetClusterRef"), c.Spec.TargetClusterRef, oldRef, old != nil)...)
	return errs
}

// OVNCentralWarnings returns what a write should be told without being
// refused: a ClusterIssuer newly named shares the central's trust with
// whatever else it signs for, and a shorter backup retention deletes
// backups on the next run. Both are the user's to choose; neither can be
// taken back by undoing the edit.
func OVNCentralWarnings(c, old *ovnv1alpha1.OVNCentral) admission.Warnings {
	var warnings admission.Warnings
	if ref := c.Spec.TLS.IssuerRef; ref != nil && ref.ResolvedKind() == ovnv1alpha1.ClusterIssuerKind &&
		(old == nil || !equality.Semantic.DeepEqual(old.Spec.TLS.IssuerRef, ref)) {
		warnings = append(warnings, fmt.Sprintf(msgSharedTrust, ref.Name))
	}
	if old == nil {
		return warnings
	}
	was, is := old.Spec.ResolvedBackup().RetentionDays, c.Spec.ResolvedBackup().RetentionDays
	if *is < *was {
		warnings = append(warnings, fmt.Sprintf(msgRetentionShortened, *was, *is))
	}
	return warnings
}

// validateNorthd repeats the schema's bounds of northd.
func validateNorthd(p *field.Path, n ovnv1alpha1.NorthdSpec) field.ErrorList {
	errs := checkInt32(p.Child("replicas"), n.Replicas, 1, math.MaxInt32)
	return append(errs, checkInt32(p.Child("threads"), n.Threads, 1, 16)...)
}

// validateIssuer requires a named issuer of a kind cert-manager has.
func validateIssuer(p *field.Path, r ovnv1alpha1.IssuerReference) field.ErrorList {
	var errs field.ErrorList
	if r.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), msgIssuerName))
	}
	switch r.Kind {
	case "", ovnv1alpha1.IssuerKind, ovnv1alpha1.ClusterIssuerKind:
	default:
		errs = append(errs, field.NotSupported(p.Child("kind"), r.Kind, []string{ovnv1alpha1.IssuerKind, ovnv1alpha1.ClusterIssuerKind}))
	}
	return errs
}

// validateBackup checks the schedule before the CronJob does: the
// apiserver would refuse a bad one only when the controller writes the
// CronJob, and then on every pass.
func validateBackup(p *field.Path, b *ovnv1alpha1.OVNBackupSpec) field.ErrorList {
	if b == nil {
		return nil
	}
	var errs field.ErrorList
	// An empty schedule is the default's: the schema fills it in, and a
	// Go client leaves it out.
	if b.Schedule != "" {
		if err := parseSchedule(b.Schedule); err != nil {
			errs = append(errs, field.Invalid(p.Child("schedule"), b.Schedule, fmt.Sprintf(msgSchedule, err)))
		}
	}
	if b.RetentionDays != nil && *b.RetentionDays < 1 {
		errs = append(errs, field.Invalid(p.Child("retentionDays"), *b.RetentionDays, msgRetention))
	}
	if b.Storage != nil {
		errs = append(errs, checkStorageSize(p.Child("storage", "size"), b.Storage.Size)...)
	}
	return errs
}

// validateDatabase checks one database, and on update (old non-nil) the
// three fields that are fixed at creation. Like the schema's transition
// rules, it compares a field only when both sides carry it.
func validateDatabase(p *field.Path, db ovnv1alpha1.OVNDatabaseSpec, old *ovnv1alpha1.OVNDatabaseSpec) field.ErrorList {
	errs := checkInt32(p.Child("replicas"), db.Replicas, 1, 5)
	if db.Replicas != nil && *db.Replicas%2 == 0 {
		errs = append(errs, field.Invalid(p.Child("replicas"), *db.Replicas, msgReplicasOdd))
	}
	errs = append(errs, checkStorageSize(p.Child("storage", "size"), db.Storage.Size)...)
	errs = append(errs, checkInt32(p.Child("electionTimerMs"), db.ElectionTimerMs, 1000, 180000)...)
	errs = append(errs, checkInt32(p.Child("nodePortBase"), db.NodePortBase, ovnv1alpha1.NodePortMin, ovnv1alpha1.NodePortMax)...)
	errs = append(errs, checkInt32(p.Child("inactivityProbeMs"), db.InactivityProbeMs, 0, math.MaxInt32)...)
	if old == nil {
		return errs
	}
	if db.Replicas != nil && old.Replicas != nil && *db.Replicas != *old.Replicas {
		errs = append(errs, field.Invalid(p.Child("replicas"), *db.Replicas, msgReplicasImmutable))
	}
	var none ovnv1alpha1.DatabaseStorageSpec
	if db.Storage != none && old.Storage != none && db.Storage != old.Storage {
		errs = append(errs, field.Invalid(p.Child("storage"), db.Storage, msgStorageImmutable))
	}
	if db.ElectionTimerMs != nil && old.ElectionTimerMs != nil && *db.ElectionTimerMs != *old.ElectionTimerMs {
		errs = append(errs, field.Invalid(p.Child("electionTimerMs"), *db.ElectionTimerMs, msgElectionTimerImmutable))
	}
	return errs
}

// portRange is the node ports one database's members use: first, and one
// per member after it.
type portRange struct {
	name        string
	first, last int32
}

func (r portRange) contains(port int32) bool { return port >= r.first && port <= r.last }

// databasePorts is the node port range of one database, on resolved values.
func databasePorts(name string, base int32, db ovnv1alpha1.OVNDatabaseSpec) portRange {
	return portRange{name: name, first: base, last: base + db.ResolvedReplicas() - 1}
}

// validateNodePorts checks the node ports of both databases on their
// resolved values, whether or not the databases are externally reachable
// yet, so that turning externallyReachable on later never fails on ports.
func validateNodePorts(p *field.Path, spec *ovnv1alpha1.OVNCentralSpec) field.ErrorList {
	var errs field.ErrorList
	nb := databasePorts("northbound", spec.NorthboundNodePortBase(), spec.Northbound)
	sb := databasePorts("southbound", spec.SouthboundNodePortBase(), spec.Southbound)
	for _, r := range []portRange{nb, sb} {
		if r.last > ovnv1alpha1.NodePortMax {
			errs = append(errs, field.Invalid(p.Child(r.name, "nodePortBase"), r.first,
				fmt.Sprintf(msgNodePortNoRoom, r.first, r.last-r.first+1, ovnv1alpha1.NodePortMax+1)))
		}
	}
	if nb.first <= sb.last && sb.first <= nb.last {
		errs = append(errs, field.Invalid(p.Child("southbound", "nodePortBase"), sb.first, msgNodePortsOverlap))
	}
	return errs
}

// validateRelay checks the relay's bounds and its node port: set only with
// externallyReachable, and never one a database member listens on.
func validateRelay(p *field.Path, spec *ovnv1alpha1.OVNCentralSpec) field.ErrorList {
	r := spec.Relay
	if r == nil {
		return nil
	}
	errs := checkInt32(p.Child("replicas"), r.Replicas, 1, math.MaxInt32)
	np := p.Child("nodePort")
	errs = append(errs, checkInt32(np, r.NodePort, ovnv1alpha1.NodePortMin, ovnv1alpha1.NodePortMax)...)
	if !r.ExternallyReachable {
		if r.NodePort != nil {
			errs = append(errs, field.Forbidden(np, msgRelayNodePortExternal))
		}
		return errs
	}
	port := r.ResolvedNodePort()
	for _, db := range []portRange{
		databasePorts("northbound", spec.NorthboundNodePortBase(), spec.Northbound),
		databasePorts("southbound", spec.SouthboundNodePortBase(), spec.Southbound),
	} {
		if db.contains(port) {
			errs = append(errs, field.Invalid(np, port, fmt.Sprintf(msgRelayNodePortInRange, port, db.name, db.first, db.last)))
		}
	}
	return errs
}

// checkInt32 repeats a schema bound on an optional integer; hi of
// math.MaxInt32 means no upper bound.
func checkInt32(p *field.Path, v *int32, lo, hi int32) field.ErrorList {
	switch {
	case v == nil || (*v >= lo && *v <= hi):
		return nil
	case hi == math.MaxInt32:
		return field.ErrorList{field.Invalid(p, *v, fmt.Sprintf(msgAtLeast, lo))}
	default:
		return field.ErrorList{field.Invalid(p, *v, fmt.Sprintf(msgBetween, lo, hi))}
	}
}

// checkStorageSize repeats the schema's pattern of a claim size; empty is
// the default's.
func checkStorageSize(p *field.Path, size string) field.ErrorList {
	if size == "" || storageSize.MatchString(size) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, size, msgStorageSize)}
}

// validateTargetRef requires a named cluster and, on update, the one the
// object was created with: its children live there, and a move would
// leave them running unmanaged.
func validateTargetRef(p *field.Path, ref, oldRef *anvilmeta.TargetClusterRef, update bool) field.ErrorList {
	var errs field.ErrorList
	if ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), msgTargetName))
	}
	if !update {
		return errs
	}
	switch {
	case (oldRef == nil) != (ref == nil):
		errs = append(errs, field.Forbidden(p, msgTargetImmutable))
	case ref != nil && oldRef.Name != ref.Name:
		errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msgTargetImmutable))
	}
	return errs
}

// ovnCentralInvalid turns the errors into the apiserver's 422 Invalid,
// which lists every field at once, or nil when there are none.
func ovnCentralInvalid(c *ovnv1alpha1.OVNCentral, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(ovnv1alpha1.GroupVersion.WithKind("OVNCentral").GroupKind(), c.Name, errs)
}
