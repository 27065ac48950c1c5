package webhook

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/extraconfig"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// Only a validating webhook is registered: every default of a NovaCompute
// is either in the CRD schema or resolved by the controller on each pass
// (the image, maxUnavailable 1), so there is nothing to mutate.
//
// +kubebuilder:webhook:path=/validate-nova-openstack-c5c3-io-v1alpha1-novacompute,mutating=false,failurePolicy=fail,sideEffects=None,groups=nova.openstack.c5c3.io,resources=novacomputes,verbs=create;update,versions=v1alpha1,name=vnovacompute.openstack.c5c3.io,admissionReviewVersions=v1

// OffboardingTaintKey is the taint openstack-hypervisor-operator puts on a
// node it offboards, with effect NoExecute.
const OffboardingTaintKey = "kvm.cloud.sap/offboarding"

// MaxTraitLength is the longest trait name Placement accepts.
const MaxTraitLength = novav1alpha1.MaxTraitLength

// Messages that are API: clients and end-to-end fixtures match on them.
const (
	msgNameTooLong         = "name must be at most %d characters: it is the app.kubernetes.io/instance label value of every child"
	msgNovaRefRequired     = "novaRef.name must be set (the Nova this node pool joins)"
	msgNovaRefImmutable    = "novaRef is immutable"
	msgSelectorEmpty       = "nodeSelector must carry at least one label"
	msgOffboarding         = "tolerates " + OffboardingTaintKey + ":NoExecute; openstack-hypervisor-operator deletes the compute service only after every agent pod on the node is gone, and a nova-compute that stays re-registers it"
	msgMaxUnavailOnDelete  = "maxUnavailable applies to RollingUpdate only"
	msgMaxUnavailMalformed = `maxUnavailable must be an integer or a percentage such as "25%"`
	msgMaxUnavailZero      = "maxUnavailable must resolve to at least 1 for RollingUpdate"
	msgCPUModels           = "cpuModels is required when cpuMode is custom and must be empty otherwise"
	msgThresholdMin        = "failedBuildsWarningThreshold must be at least 1: a counter of 0 is a host whose builds succeed"
	msgRepository          = "repository must be set"
	msgTagXorDigest        = "image: set exactly one of tag or digest"
	msgTargetName          = "target cluster name must be set"
	msgTargetImmutable     = "targetClusterRef is immutable"
	msgCustomTrait         = "must be a custom trait: CUSTOM_ followed by upper-case letters, digits and underscores"
	msgLineBreak           = "%s must not contain a newline or carriage return"
	msgControl             = "%s must not contain a control character"
	msgSectionShape        = "section name must not be empty, contain [ or ], or start or end with whitespace: the rendered file would read it as another section"
	msgKeyShape            = "key must not be empty or contain whitespace or any of = : [ ] # ;: the rendered file would read it as another option"
)

// NovaComputeValidator checks a NovaCompute beyond its schema. Several of
// its rules repeat a schema rule, so that the pure function below is the
// complete statement of what a pool may look like, whichever layer answers
// first.
type NovaComputeValidator struct {
	// workloadGate is the workload policy, which the pool controller
	// checks again.
	workloadGate
}

var _ admission.Validator[*novav1alpha1.NovaCompute] = NovaComputeValidator{}

// SetupNovaComputeWebhook registers the NovaCompute validator with the
// manager's webhook server.
func SetupNovaComputeWebhook(mgr ctrl.Manager, policy workloadpolicy.Policy) error {
	v := NovaComputeValidator{workloadGate{Policy: policy, Namespaces: mgr.GetAPIReader()}}
	return ctrl.NewWebhookManagedBy(mgr, &novav1alpha1.NovaCompute{}).WithValidator(v).Complete()
}

// ValidateCreate implements admission.Validator.
func (v NovaComputeValidator) ValidateCreate(ctx context.Context, nc *novav1alpha1.NovaCompute) (admission.Warnings, error) {
	policy, err := v.check(ctx, nc.Namespace, workloadpolicy.NovaComputeWorkload(nc))
	if err != nil {
		return nil, err
	}
	return nil, novaComputeInvalid(nc, append(ValidateNovaCompute(nc, nil), policy...))
}

// ValidateUpdate implements admission.Validator. The policy, the
// namespace's opt-in included, is checked only when the image, the
// tolerations or the node selector change.
func (v NovaComputeValidator) ValidateUpdate(ctx context.Context, old, nc *novav1alpha1.NovaCompute) (admission.Warnings, error) {
	policy, err := v.checkUpdate(ctx, nc.Namespace, workloadpolicy.NovaComputeWorkload(old), workloadpolicy.NovaComputeWorkload(nc))
	if err != nil {
		return nil, err
	}
	return nil, novaComputeInvalid(nc, append(ValidateNovaCompute(nc, old), policy...))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (NovaComputeValidator) ValidateDelete(context.Context, *novav1alpha1.NovaCompute) (admission.Warnings, error) {
	return nil, nil
}

// ValidateNovaCompute returns every problem with a NovaCompute. old is nil on
// create; on update it is the stored object. It is pure, so the rules are
// table-tested without an apiserver.
func ValidateNovaCompute(nc, old *novav1alpha1.NovaCompute) field.ErrorList {
	return redactUserInfo(validateNovaCompute(nc, old))
}

// validateNovaCompute holds the rules of ValidateNovaCompute; the exported function redacts what
// its errors would echo.
func validateNovaCompute(nc, old *novav1alpha1.NovaCompute) field.ErrorList {
	if old != nil && equality.Semantic.DeepEqual(old.Spec, nc.Spec) {
		// An update that leaves the spec alone (finalizers, labels, the
		// teardown) brings nothing new to check. Refusing it would strand a
		// pool admitted under older rules, or one that bypassed admission:
		// the controller could not even add its finalizers to report the
		// refusal, or remove them to let it go.
		return nil
	}
	var errs field.ErrorList
	spec := field.NewPath("spec")

	if old == nil && len(nc.Name) > novav1alpha1.MaxNovaComputeNameLength {
		// Create only: the name cannot change, so an update could never fix
		// it, and refusing every update of a pool an earlier release
		// admitted would strand it.
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), nc.Name,
			fmt.Sprintf(msgNameTooLong, novav1alpha1.MaxNovaComputeNameLength)))
	}

	if nc.Spec.NovaRef.Name == "" {
		errs = append(errs, field.Required(spec.Child("novaRef", "name"), msgNovaRefRequired))
	}
	if old != nil && old.Spec.NovaRef.Name != nc.Spec.NovaRef.Name {
		// The pool's compute services are registered with the first Nova
		// and keep claiming their host names there.
		errs = append(errs, field.Invalid(spec.Child("novaRef", "name"), nc.Spec.NovaRef.Name, msgNovaRefImmutable))
	}

	errs = append(errs, validateNodeSelector(spec.Child("nodeSelector"), nc.Spec.NodeSelector)...)
	errs = append(errs, validateTolerations(spec.Child("tolerations"), nc.Spec.Tolerations)...)
	errs = append(errs, validateUpdateStrategy(spec.Child("updateStrategy"), nc.Spec.UpdateStrategy)...)

	if lv := nc.Spec.Libvirt; (lv.CPUMode == "custom") != (len(lv.CPUModels) > 0) {
		p := spec.Child("libvirt", "cpuModels")
		if len(lv.CPUModels) == 0 {
			errs = append(errs, field.Required(p, msgCPUModels))
		} else {
			errs = append(errs, field.Invalid(p, lv.CPUModels, msgCPUModels))
		}
	}

	if img := nc.Spec.Image; img != nil {
		errs = append(errs, validateImage(spec.Child("image"), img)...)
	}
	errs = append(errs, validateExtraConfig(spec.Child("extraConfig"), nc.Spec.ExtraConfig)...)
	errs = append(errs, validateTargetClusterRef(spec.Child("targetClusterRef"), nc.Spec.TargetClusterRef, old)...)
	errs = append(errs, validateTraits(spec.Child("traits"), nc.Spec.Traits)...)
	errs = append(errs, validateHostTraits(spec.Child("hostTraits"), nc.Spec.HostTraits)...)
	// The schema's minimum, repeated for a pool that reaches admission
	// without the CRD's validation (an older CRD during an upgrade).
	if th := nc.Spec.FailedBuildsWarningThreshold; th != nil && *th < 1 {
		errs = append(errs, field.Invalid(spec.Child("failedBuildsWarningThreshold"), *th, msgThresholdMin))
	}
	return errs
}

// validateNodeSelector requires a selector that is a valid label selector:
// an empty one would select every node of the cluster, and a key or value
// the apiserver refuses would make every Node list of the pool fail.
func validateNodeSelector(p *field.Path, selector map[string]string) field.ErrorList {
	if len(selector) == 0 {
		return field.ErrorList{field.Required(p, msgSelectorEmpty)}
	}
	var errs field.ErrorList
	for _, k := range slices.Sorted(maps.Keys(selector)) {
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(selector[k]) {
			errs = append(errs, field.Invalid(pathKey(p, k), selector[k], msg))
		}
	}
	return errs
}

// offboardingTaint is what openstack-hypervisor-operator puts on a node it
// offboards; it carries no value.
var offboardingTaint = corev1.Taint{Key: OffboardingTaintKey, Effect: corev1.TaintEffectNoExecute}

// validateTolerations refuses a toleration that keeps nova-compute on a node
// being offboarded. The hypervisor operator deletes the node's compute
// service only once every agent pod is gone, and a nova-compute that stays
// registers the service again. A toleration with tolerationSeconds ends and
// is admitted. Matching is Kubernetes' own, so a wildcard (operator Exists
// without key) or a toleration without effect is caught as well.
func validateTolerations(p *field.Path, tolerations []corev1.Toleration) field.ErrorList {
	var errs field.ErrorList
	for i := range tolerations {
		t := &tolerations[i]
		// Lt and Gt compare numbers; the taint has no value, so they never
		// match it, and the feature gate does not matter.
		if t.TolerationSeconds == nil && t.ToleratesTaint(logr.Discard(), &offboardingTaint, false) {
			errs = append(errs, field.Invalid(p.Index(i), *t, msgOffboarding))
		}
	}
	return errs
}

// validateUpdateStrategy checks maxUnavailable before the DaemonSet does: the
// apiserver would refuse it only when the controller writes the DaemonSet,
// and then on every pass. A percentage is resolved against 100 nodes, since
// the real count is not known here, and rounded up as the DaemonSet
// controller rounds, so "1%" means at least one node.
func validateUpdateStrategy(p *field.Path, s novav1alpha1.UpdateStrategySpec) field.ErrorList {
	mu := s.MaxUnavailable
	if mu == nil {
		return nil
	}
	p = p.Child("maxUnavailable")
	if s.Type == novav1alpha1.OnDeleteStrategy {
		return field.ErrorList{field.Invalid(p, mu.String(), msgMaxUnavailOnDelete)}
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(mu, 100, true)
	switch {
	case err != nil:
		return field.ErrorList{field.Invalid(p, mu.String(), msgMaxUnavailMalformed)}
	case n < 1:
		return field.ErrorList{field.Invalid(p, mu.String(), msgMaxUnavailZero)}
	}
	return nil
}

// validateImage repeats the ImageSpec schema rules.
func validateImage(p *field.Path, img *anvilmeta.ImageSpec) field.ErrorList {
	var errs field.ErrorList
	if img.Repository == "" {
		errs = append(errs, field.Required(p.Child("repository"), msgRepository))
	}
	if (img.Tag == "") == (img.Digest == "") {
		errs = append(errs, field.Invalid(p, field.OmitValueType{}, msgTagXorDigest))
	}
	return errs
}

// validateExtraConfig refuses what would make the rendered file mean
// something else than the spec says: control characters, which could start
// a new line and so a new option or section; names the INI reader would
// split differently; the options Anvil owns; and every option off the
// allowlist. Values are never echoed,
// since an option value may be a credential.
func validateExtraConfig(p *field.Path, extra map[string]map[string]string) field.ErrorList {
	var errs field.ErrorList
	for _, section := range slices.Sorted(maps.Keys(extra)) {
		sp := pathKey(p, section)
		sectionOK := false
		if err := checkText(sp, "section name", section, section); err != nil {
			errs = append(errs, err)
		} else if section == "" || strings.ContainsAny(section, "[]") || strings.TrimSpace(section) != section {
			errs = append(errs, field.Invalid(sp, section, msgSectionShape))
		} else {
			sectionOK = true
		}
		options := extra[section]
		for _, key := range slices.Sorted(maps.Keys(options)) {
			kp := pathKey(sp, key)
			keyOK := false
			if err := checkText(kp, "key", key, key); err != nil {
				errs = append(errs, err)
			} else if key == "" || strings.ContainsAny(key, "=:[]#;") || strings.IndexFunc(key, unicode.IsSpace) >= 0 {
				errs = append(errs, field.Invalid(kp, key, msgKeyShape))
			} else {
				keyOK = true
			}
			if err := checkText(kp, "value", options[key], field.OmitValueType{}); err != nil {
				errs = append(errs, err)
			}
			// A malformed name is refused once, for its shape; only a
			// well-formed option is looked up.
			if sectionOK && keyOK {
				if msg := extraconfig.Refusal(section, key); msg != "" {
					errs = append(errs, field.Forbidden(kp, msg))
				}
			}
		}
	}
	return errs
}

// checkText refuses control characters in s. A line break gets its own
// message, since it is the one that injects lines; any other control
// character (NUL, DEL, NEL, ...) has no place in an INI file either.
func checkText(p *field.Path, what, s string, shown any) *field.Error {
	switch {
	case strings.ContainsAny(s, "\n\r"):
		return field.Invalid(p, shown, fmt.Sprintf(msgLineBreak, what))
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return field.Invalid(p, shown, fmt.Sprintf(msgControl, what))
	}
	return nil
}

// validateTargetClusterRef requires a named cluster and, on update, the one
// the pool was created with: its DaemonSet and ConfigMaps live there, and a
// move would leave them running unmanaged.
func validateTargetClusterRef(p *field.Path, ref *anvilmeta.TargetClusterRef, old *novav1alpha1.NovaCompute) field.ErrorList {
	var errs field.ErrorList
	if ref != nil && ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), msgTargetName))
	}
	if old == nil {
		return errs
	}
	switch oldRef := old.Spec.TargetClusterRef; {
	case (oldRef == nil) != (ref == nil):
		errs = append(errs, field.Forbidden(p, msgTargetImmutable))
	case ref != nil && oldRef.Name != ref.Name:
		errs = append(errs, field.Invalid(p.Child("name"), ref.Name, msgTargetImmutable))
	}
	return errs
}

// validateTraits applies Placement's rule for custom traits, so that a bad
// trait is refused here rather than by Placement on every pass, and refuses
// duplicates.
func validateTraits(p *field.Path, traits []string) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, t := range traits {
		ip := p.Index(i)
		switch {
		case len(t) > MaxTraitLength:
			errs = append(errs, field.TooLong(ip, "", MaxTraitLength))
		case !novav1alpha1.IsCustomTrait(t):
			errs = append(errs, field.Invalid(ip, t, msgCustomTrait))
		}
		if seen[t] {
			errs = append(errs, field.Duplicate(ip, t))
		}
		seen[t] = true
	}
	return errs
}

// validateHostTraits checks every entry's node name and traits, and that no
// node has two entries, which would leave its traits ambiguous.
func validateHostTraits(p *field.Path, entries []novav1alpha1.HostTraitsSpec) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, h := range entries {
		ip := p.Index(i)
		np := ip.Child("nodeName")
		for _, msg := range validation.IsDNS1123Subdomain(h.NodeName) {
			errs = append(errs, field.Invalid(np, h.NodeName, msg))
		}
		if seen[h.NodeName] {
			errs = append(errs, field.Duplicate(np, h.NodeName))
		}
		seen[h.NodeName] = true
		errs = append(errs, validateTraits(ip.Child("traits"), h.Traits)...)
	}
	return errs
}

// pathKey is p.Key(k) with control characters escaped, so that an error
// about a key holding a newline still prints on one line.
func pathKey(p *field.Path, k string) *field.Path {
	if strings.IndexFunc(k, unicode.IsControl) >= 0 {
		q := strconv.QuoteToASCII(k)
		k = q[1 : len(q)-1]
	}
	return p.Key(k)
}

// novaComputeInvalid turns the errors into the apiserver's 422 Invalid,
// which lists every field at once, or nil when there are none.
func novaComputeInvalid(nc *novav1alpha1.NovaCompute, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(novav1alpha1.GroupVersion.WithKind("NovaCompute").GroupKind(), nc.Name, errs)
}
