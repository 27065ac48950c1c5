package webhook

import (
	"context"
	"fmt"
	"math"
	"regexp"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	anvilmeta "github.com/anvil/anvil/api/meta"
	ovnv1alpha1 "github.com/anvil/anvil/api/ovn/v1alpha1"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Only a validating webhook is registered: every default of an OVNChassis
// is either in the CRD schema or resolved by the controller on each pass
// (the image, maxUnavailable, the revalidator threads).
//
// +kubebuilder:webhook:path=/validate-ovn-openstack-c5c3-io-v1alpha1-ovnchassis,mutating=false,failurePolicy=fail,sideEffects=None,groups=ovn.openstack.c5c3.io,resources=ovnchassis,verbs=create;update,versions=v1alpha1,name=vovnchassis.openstack.c5c3.io,admissionReviewVersions=v1

// Messages that are API: clients and end-to-end fixtures match on them.
const (
	msgChassisNameTooLong  = "name must be at most %d characters: the Job {name}-chassis-del-<8 hex> may have at most 63"
	msgCentralRefRequired  = "centralRef.name must be set (the OVNCentral whose databases the chassis connect to)"
	msgCentralRefImmutable = "centralRef is immutable"
	msgBridgeName          = "bridge must be 1 to 15 letters, digits, '_', '.' or '-': it becomes a Linux interface name"
	msgBridgeMappedTwice   = "bridge is already mapped to physical network %q: a bridge carries one provider network"
)

// bridgeName is the schema's pattern for an OVS bridge.
var bridgeName = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,15}$`)

// OVNChassisValidator checks an OVNChassis beyond its schema. It repeats
// the schema's rules, so that ValidateOVNChassis is the complete statement
// of what a chassis may look like and a controller can check it again.
type OVNChassisValidator struct {
	// workloadGate is the workload policy, which the controller checks
	// again.
	workloadGate
}

var _ admission.Validator[*ovnv1alpha1.OVNChassis] = OVNChassisValidator{}

// SetupOVNChassisWebhook registers the OVNChassis validator with the
// manager's webhook server.
func SetupOVNChassisWebhook(mgr ctrl.Manager, policy workloadpolicy.Policy) error {
	return ctrl.NewWebhookManagedBy(mgr, &ovnv1alpha1.OVNChassis{}).WithValidator(OVNChassisValidator{workloadGate{Policy: policy, Namespaces: mgr.GetAPIReader()}}).Complete()
}

// ValidateCreate implements admission.Validator.
func (v OVNChassisValidator) ValidateCreate(ctx context.Context, ch *ovnv1alpha1.OVNChassis) (admission.Warnings, error) {
	policy, err := v.check(ctx, ch.Namespace, workloadpolicy.OVNChassisWorkload(ch))
	if err != nil {
		return nil, err
	}
	return nil, ovnChassisInvalid(ch, append(ValidateOVNChassis(ch, nil), policy...))
}

// ValidateUpdate implements admission.Validator. The workload policy is
// checked only when the image, the tolerations or a node selector change.
func (v OVNChassisValidator) ValidateUpdate(ctx context.Context, old, ch *ovnv1alpha1.OVNChassis) (admission.Warnings, error) {
	policy, err := v.checkUpdate(ctx, ch.Namespace, workloadpolicy.OVNChassisWorkload(old), workloadpolicy.OVNChassisWorkload(ch))
	if err != nil {
		return nil, err
	}
	return nil, ovnChassisInvalid(ch, append(ValidateOVNChassis(ch, old), policy...))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (OVNChassisValidator) ValidateDelete(context.Context, *ovnv1alpha1.OVNChassis) (admission.Warnings, error) {
	return nil, nil
}

// ValidateOVNChassis returns every problem with an OVNChassis. old is nil
// on create; on update it is the stored object. It is pure, so the rules
// are table-tested without an apiserver.
func ValidateOVNChassis(ch, old *ovnv1alpha1.OVNChassis) field.ErrorList {
	return redactUserInfo(validateOVNChassis(ch, old))
}

// validateOVNChassis holds the rules of ValidateOVNChassis; the exported function redacts what
// its errors would echo.
func validateOVNChassis(ch, old *ovnv1alpha1.OVNChassis) field.ErrorList {
	if old != nil && ch.DeletionTimestamp != nil && equality.Semantic.DeepEqual(old.Spec, ch.Spec) {
		// The teardown removes finalizers by update; a chassis admitted
		// under older rules must still finish it.
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if old == nil && len(ch.Name) > ovnv1alpha1.MaxOVNChassisNameLength {
		// Create only: a name cannot change, so an update could not fix it.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), ch.Name,
			fmt.Sprintf(msgChassisNameTooLong, ovnv1alpha1.MaxOVNChassisNameLength)))
	}

	ref := spec.Child("centralRef", "name")
	if ch.Spec.CentralRef.Name == "" {
		errs = append(errs, field.Required(ref, msgCentralRefRequired))
	}
	if old != nil && old.Spec.CentralRef.Name != ch.Spec.CentralRef.Name {
		// The chassis are registered in the first central's southbound
		// database, and nothing would remove them there.
		errs = append(errs, field.Invalid(ref, ch.Spec.CentralRef.Name, msgCentralRefImmutable))
	}

	// An empty selector would make every node of the cluster a chassis,
	// or every chassis a gateway.
	errs = append(errs, validateNodeSelector(spec.Child("nodeSelector"), ch.Spec.NodeSelector)...)
	if gw := ch.Spec.Gateway; gw != nil {
		errs = append(errs, validateNodeSelector(spec.Child("gateway", "nodeSelector"), gw.NodeSelector)...)
	}
	errs = append(errs, validateBridgeMappings(spec.Child("bridgeMappings"), ch.Spec.BridgeMappings)...)
	switch ch.Spec.EncapType {
	case "", ovnv1alpha1.EncapGeneve, ovnv1alpha1.EncapVXLAN:
	default:
		errs = append(errs, field.NotSupported(spec.Child("encapType"), ch.Spec.EncapType, []string{ovnv1alpha1.EncapGeneve, ovnv1alpha1.EncapVXLAN}))
	}
	errs = append(errs, validateChassisUpdateStrategy(spec.Child("updateStrategy"), ch.Spec.UpdateStrategy)...)
	errs = append(errs, checkInt32(spec.Child("remoteProbeIntervalMs"), ch.Spec.RemoteProbeIntervalMs, 0, math.MaxInt32)...)
	errs = append(errs, checkInt32(spec.Child("ovs", "revalidatorThreads"), ch.Spec.OVS.RevalidatorThreads, 1, math.MaxInt32)...)
	if ch.Spec.Image != nil {
		errs = append(errs, validateImage(spec.Child("image"), ch.Spec.Image)...)
	}
	var oldRef *anvilmeta.TargetClusterRef
	if old != nil {
		oldRef = old.Spec.TargetClusterRef
	}
	errs = append(errs, validateTargetRef(spec.Child("targetClusterRef"), ch.Spec.TargetClusterRef, oldRef, old != nil)...)
	return errs
}

// validateBridgeMappings checks every mapping's names, and that no network
// and no bridge appears twice: ovn-controller's mapping is one bridge per
// network and one network per bridge.
func validateBridgeMappings(p *field.Path, mappings []ovnv1alpha1.BridgeMapping) field.ErrorList {
	var errs field.ErrorList
	networks := map[string]bool{}
	bridges := map[string]string{}
	for i, m := range mappings {
		ip := p.Index(i)
		np, bp := ip.Child("physicalNetwork"), ip.Child("bridge")
		for _, msg := range validation.IsDNS1123Label(m.PhysicalNetwork) {
			errs = append(errs, field.Invalid(np, m.PhysicalNetwork, msg))
		}
		if networks[m.PhysicalNetwork] {
			errs = append(errs, field.Duplicate(np, m.PhysicalNetwork))
		}
		networks[m.PhysicalNetwork] = true
		if !bridgeName.MatchString(m.Bridge) {
			errs = append(errs, field.Invalid(bp, m.Bridge, msgBridgeName))
		}
		if first, seen := bridges[m.Bridge]; seen {
			errs = append(errs, field.Invalid(bp, m.Bridge, fmt.Sprintf(msgBridgeMappedTwice, first)))
		} else {
			bridges[m.Bridge] = m.PhysicalNetwork
		}
	}
	return errs
}

// validateChassisUpdateStrategy checks maxUnavailable before the DaemonSets
// do: the apiserver would refuse it only when the controller writes them,
// and then on every pass.
func validateChassisUpdateStrategy(p *field.Path, s ovnv1alpha1.ChassisUpdateStrategy) field.ErrorList {
	var errs field.ErrorList
	switch s.Type {
	case "", ovnv1alpha1.RollingUpdateStrategy, ovnv1alpha1.OnDeleteStrategy:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), s.Type, []string{ovnv1alpha1.RollingUpdateStrategy, ovnv1alpha1.OnDeleteStrategy}))
	}
	mu := s.MaxUnavailable
	if mu == nil {
		return errs
	}
	if s.Type == ovnv1alpha1.OnDeleteStrategy {
		errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *mu, msgMaxUnavailOnDelete))
	}
	if *mu < 1 {
		errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *mu, msgMaxUnavailZero))
	}
	return errs
}

// ovnChassisInvalid turns the errors into the apiserver's 422 Invalid,
// which lists every field at once, or nil when there are none.
func ovnChassisInvalid(ch *ovnv1alpha1.OVNChassis, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(ovnv1alpha1.GroupVersion.WithKind("OVNChassis").GroupKind(), ch.Name, errs)
}
