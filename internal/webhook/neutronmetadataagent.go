package webhook

import (
	"context"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	anvilmeta "github.com/anvil/anvil/api/meta"
	neutronv1alpha1 "github.com/anvil/anvil/api/neutron/v1alpha1"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Only a validating webhook is registered: every default of a
// NeutronMetadataAgent (port, protocol, Secret keys, workers) is resolved
// by the controller on each pass, so the stored spec is the one written.
//
// +kubebuilder:webhook:path=/validate-neutron-openstack-c5c3-io-v1alpha1-neutronmetadataagent,mutating=false,failurePolicy=fail,sideEffects=None,groups=neutron.openstack.c5c3.io,resources=neutronmetadataagents,verbs=create;update,versions=v1alpha1,name=vneutronmetadataagent.openstack.c5c3.io,admissionReviewVersions=v1

// Messages that are API: clients and end-to-end fixtures match on them.
// Those of a CEL rule are the schema's, word for word.
const (
	msgChassisRefRequired   = "chassisRef.name must be set (the OVNChassis this agent runs alongside)"
	msgChassisRefImmutable  = "chassisRef is immutable"
	msgSecretRefName        = "%s.name must be set when spec.novaMetadata.%s is configured"
	msgCABundleNeedsHTTPS   = "caBundleSecretRef requires protocol https: the CA bundle verifies the metadata API's certificate, and plain http has none"
	msgReleaseFormat        = "openStackRelease must be a release such as 2026.1: four digits, a dot, and 1 or 2"
	msgReleaseTooOld        = "openStackRelease must be at least %s"
	msgReleaseOldUnchanged  = "spec.openStackRelease %s is older than %s, the oldest release Anvil creates an agent for; it is kept only because it did not change"
	msgNovaMetadataHostForm = "host must be a host name or an IP address, without scheme, port, path or user info: protocol and port are fields of their own"
)

// releaseFormat is the schema's pattern of openStackRelease: a year and
// its first or second release.
var releaseFormat = regexp.MustCompile(`^\d{4}\.[12]$`)

// NeutronMetadataAgentValidator checks a NeutronMetadataAgent beyond its
// schema. It repeats the schema's rules, so that
// ValidateNeutronMetadataAgent is the complete statement of what an agent
// may look like and a controller can check it again.
type NeutronMetadataAgentValidator struct {
	// workloadGate is the workload policy, which the controller checks
	// again.
	workloadGate
}

var _ admission.Validator[*neutronv1alpha1.NeutronMetadataAgent] = NeutronMetadataAgentValidator{}

// SetupNeutronMetadataAgentWebhook registers the NeutronMetadataAgent
// validator with the manager's webhook server.
func SetupNeutronMetadataAgentWebhook(mgr ctrl.Manager, policy workloadpolicy.Policy) error {
	return ctrl.NewWebhookManagedBy(mgr, &neutronv1alpha1.NeutronMetadataAgent{}).WithValidator(NeutronMetadataAgentValidator{workloadGate{Policy: policy, Namespaces: mgr.GetAPIReader()}}).Complete()
}

// ValidateCreate implements admission.Validator.
func (v NeutronMetadataAgentValidator) ValidateCreate(ctx context.Context, a *neutronv1alpha1.NeutronMetadataAgent) (admission.Warnings, error) {
	policy, err := v.check(ctx, a.Namespace, workloadpolicy.NeutronMetadataAgentWorkload(a))
	if err != nil {
		return nil, err
	}
	return nil, metadataAgentInvalid(a, append(ValidateNeutronMetadataAgent(a, nil), policy...))
}

// ValidateUpdate implements admission.Validator. A release below the
// minimum that did not change only warns, so an old agent can be torn
// down; the workload policy is checked only when the image changes.
func (v NeutronMetadataAgentValidator) ValidateUpdate(ctx context.Context, old, a *neutronv1alpha1.NeutronMetadataAgent) (admission.Warnings, error) {
	var warnings admission.Warnings
	if r := a.Spec.OpenStackRelease; r == old.Spec.OpenStackRelease && releaseBelowMinimum(r) {
		warnings = append(warnings, fmt.Sprintf(msgReleaseOldUnchanged, r, neutronv1alpha1.MinOpenStackRelease))
	}
	policy, err := v.checkUpdate(ctx, a.Namespace, workloadpolicy.NeutronMetadataAgentWorkload(old), workloadpolicy.NeutronMetadataAgentWorkload(a))
	if err != nil {
		return warnings, err
	}
	return warnings, metadataAgentInvalid(a, append(ValidateNeutronMetadataAgent(a, old), policy...))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (NeutronMetadataAgentValidator) ValidateDelete(context.Context, *neutronv1alpha1.NeutronMetadataAgent) (admission.Warnings, error) {
	return nil, nil
}

// ValidateNeutronMetadataAgent returns every problem with an agent. old
// is nil on create; on update it is the stored object. It is pure, so the
// rules are table-tested without an apiserver.
func ValidateNeutronMetadataAgent(a, old *neutronv1alpha1.NeutronMetadataAgent) field.ErrorList {
	return redactUserInfo(validateNeutronMetadataAgent(a, old))
}

// validateNeutronMetadataAgent holds the rules of ValidateNeutronMetadataAgent; the exported function redacts what
// its errors would echo.
func validateNeutronMetadataAgent(a, old *neutronv1alpha1.NeutronMetadataAgent) field.ErrorList {
	if old != nil && a.DeletionTimestamp != nil && equality.Semantic.DeepEqual(old.Spec, a.Spec) {
		// The teardown removes finalizers by update; an agent admitted
		// under older rules must still finish it.
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old == nil && len(a.Name) > neutronv1alpha1.MaxNeutronMetadataAgentNameLength {
		// Create only: a name cannot change, so an update could not fix it.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), a.Name,
			fmt.Sprintf(msgNameTooLong, neutronv1alpha1.MaxNeutronMetadataAgentNameLength)))
	}
	var oldSpec *neutronv1alpha1.NeutronMetadataAgentSpec
	if old != nil {
		oldSpec = &old.Spec
	}
	errs = append(errs, validateRelease(spec.Child("openStackRelease"), a.Spec.OpenStackRelease, oldSpec)...)
	errs = append(errs, validateImage(spec.Child("image"), &a.Spec.Image)...)
	errs = append(errs, validateChassisRef(spec.Child("chassisRef", "name"), a.Spec.ChassisRef.Name, oldSpec)...)
	errs = append(errs, validateNovaMetadata(spec.Child("novaMetadata"), a.Spec.NovaMetadata)...)
	errs = append(errs, checkInt32(spec.Child("metadataWorkers"), a.Spec.MetadataWorkers, 1, math.MaxInt32)...)
	var oldRef *anvilmeta.TargetClusterRef
	if oldSpec != nil {
		oldRef = oldSpec.TargetClusterRef
	}
	errs = append(errs, validateTargetRef(spec.Child("targetClusterRef"), a.Spec.TargetClusterRef, oldRef, old != nil)...)
	return errs
}

// validateRelease repeats the schema's pattern and refuses a release below
// the minimum on create and whenever it changes; an unchanged old release
// is only warned about, by ValidateUpdate.
func validateRelease(p *field.Path, release string, old *neutronv1alpha1.NeutronMetadataAgentSpec) field.ErrorList {
	if !releaseFormat.MatchString(release) {
		return field.ErrorList{field.Invalid(p, release, msgReleaseFormat)}
	}
	if (old == nil || old.OpenStackRelease != release) && releaseBelowMinimum(release) {
		return field.ErrorList{field.Invalid(p, release, fmt.Sprintf(msgReleaseTooOld, neutronv1alpha1.MinOpenStackRelease))}
	}
	return nil
}

// releaseBelowMinimum reports whether a well-formed release is older than
// MinOpenStackRelease, comparing year and half as numbers.
func releaseBelowMinimum(release string) bool {
	if !releaseFormat.MatchString(release) {
		return false
	}
	year, half := splitRelease(release)
	minYear, minHalf := splitRelease(neutronv1alpha1.MinOpenStackRelease)
	return year < minYear || (year == minYear && half < minHalf)
}

// splitRelease returns the year and the half of a release that matches
// releaseFormat.
func splitRelease(release string) (year, half int) {
	y, h, _ := strings.Cut(release, ".")
	year, _ = strconv.Atoi(y)
	half, _ = strconv.Atoi(h)
	return year, half
}

// validateChassisRef requires the chassis and, on update, the one the
// agent was created with: the DaemonSet runs on that chassis's nodes and
// cluster, and a move would leave it running unmanaged there.
func validateChassisRef(p *field.Path, name string, old *neutronv1alpha1.NeutronMetadataAgentSpec) field.ErrorList {
	var errs field.ErrorList
	if name == "" {
		errs = append(errs, field.Required(p, msgChassisRefRequired))
	} else if err := checkText(p, "chassisRef.name", name, name); err != nil {
		errs = append(errs, err)
	}
	if old != nil && old.ChassisRef.Name != name {
		errs = append(errs, field.Invalid(p, name, msgChassisRefImmutable))
	}
	return errs
}

// validateNovaMetadata checks how the agent reaches Nova: a host the
// rendered file can carry on one line, the schema's bounds, a CA bundle
// only where TLS verifies with it, and named Secrets.
func validateNovaMetadata(p *field.Path, n neutronv1alpha1.NovaMetadataSpec) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, validateMetadataHost(p.Child("host"), n.Host)...)
	errs = append(errs, checkInt32(p.Child("port"), n.Port, 1, 65535)...)
	switch n.Protocol {
	case "", neutronv1alpha1.ProtocolHTTP, neutronv1alpha1.ProtocolHTTPS:
	default:
		errs = append(errs, field.NotSupported(p.Child("protocol"), n.Protocol,
			[]string{neutronv1alpha1.ProtocolHTTP, neutronv1alpha1.ProtocolHTTPS}))
	}
	if n.CABundleSecretRef != nil && n.Protocol != neutronv1alpha1.ProtocolHTTPS {
		errs = append(errs, field.Invalid(p.Child("caBundleSecretRef"), n.CABundleSecretRef.Name, msgCABundleNeedsHTTPS))
	}
	errs = append(errs, validateSecretKeyRef(p, "caBundleSecretRef", n.CABundleSecretRef)...)
	errs = append(errs, validateSecretKeyRef(p, "sharedSecretRef", n.SharedSecretRef)...)
	return errs
}

// validateMetadataHost admits an empty host, a DNS name or an IP literal.
// Anything else, a URL above all, would render a nova_metadata_host the
// agent cannot connect to, and the failure would only show when an
// instance asks for its metadata.
func validateMetadataHost(p *field.Path, host string) field.ErrorList {
	if host == "" {
		return nil
	}
	// A host that carries user info may carry a password, and the error
	// goes to whoever applied the object.
	shown := host
	if strings.Contains(host, "@") {
		shown = "<redacted>"
	}
	if err := checkText(p, "host", host, shown); err != nil {
		return field.ErrorList{err}
	}
	if net.ParseIP(host) != nil {
		return nil
	}
	// Host names are case-insensitive; the DNS-1123 check is not.
	if len(validation.IsDNS1123Subdomain(strings.ToLower(host))) == 0 {
		return nil
	}
	return field.ErrorList{field.Invalid(p, shown, msgNovaMetadataHostForm)}
}

// validateSecretKeyRef requires a named Secret when the reference is set,
// and a name without control characters, since it enters the pod template.
func validateSecretKeyRef(p *field.Path, what string, ref *neutronv1alpha1.SecretKeyRef) field.ErrorList {
	if ref == nil {
		return nil
	}
	np := p.Child(what, "name")
	if ref.Name == "" {
		return field.ErrorList{field.Required(np, fmt.Sprintf(msgSecretRefName, what, what))}
	}
	if err := checkText(np, what+".name", ref.Name, ref.Name); err != nil {
		return field.ErrorList{err}
	}
	return nil
}

// metadataAgentInvalid turns the errors into the apiserver's 422 Invalid,
// which lists every field at once, or nil when there are none.
func metadataAgentInvalid(a *neutronv1alpha1.NeutronMetadataAgent, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(neutronv1alpha1.GroupVersion.WithKind("NeutronMetadataAgent").GroupKind(), a.Name, errs)
}
