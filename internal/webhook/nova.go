package webhook

import (
	"context"
	"errors"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/keystonepolicy"
)

// +kubebuilder:webhook:path=/validate-nova-openstack-c5c3-io-v1alpha1-nova,mutating=false,failurePolicy=fail,sideEffects=None,groups=nova.openstack.c5c3.io,resources=novas,verbs=create;update,versions=v1alpha1,name=vnova.openstack.c5c3.io,admissionReviewVersions=v1

// NovaValidator checks a Nova beyond its schema.
type NovaValidator struct {
	// Keystone limits the hosts a Nova may send its service password to;
	// the Nova and pool controllers check the same policy again.
	Keystone keystonepolicy.Policy
	// ControlPlanes reads the Nova's owning ControlPlane, whose declared
	// Keystone a child may name. It reads the apiserver, not a cache, so
	// a ControlPlane's new Keystone counts as soon as it projects a child.
	ControlPlanes client.Reader
}

// SetupNovaWebhook registers the validator with the manager's webhook
// server; keystone is the operator's Keystone host policy.
func SetupNovaWebhook(mgr ctrl.Manager, keystone keystonepolicy.Policy) error {
	v := NovaValidator{Keystone: keystone, ControlPlanes: mgr.GetAPIReader()}
	return ctrl.NewWebhookManagedBy(mgr, &novav1alpha1.Nova{}).WithValidator(v).Complete()
}

// ValidateCreate implements admission.Validator.
func (v NovaValidator) ValidateCreate(ctx context.Context, nova *novav1alpha1.Nova) (admission.Warnings, error) {
	policy, err := v.checkKeystone(ctx, nova)
	if err != nil {
		return nil, err
	}
	return nil, toInvalid(nova, append(ValidateNova(nova), policy...))
}

// ValidateUpdate implements admission.Validator. The Keystone policy is
// checked only when a Keystone URL or the controlling owner changes, so
// that a tightened policy never blocks the teardown of an existing Nova;
// the controllers still refuse to use such a Nova.
func (v NovaValidator) ValidateUpdate(ctx context.Context, old, nova *novav1alpha1.Nova) (admission.Warnings, error) {
	errs := ValidateNova(nova)
	if keystoneChanged(old, nova) {
		policy, err := v.checkKeystone(ctx, nova)
		if err != nil {
			return nil, err
		}
		errs = append(errs, policy...)
	}
	return nil, toInvalid(nova, errs)
}

// checkKeystone returns every Keystone URL of nova the policy refuses. It
// fails closed: an owner that cannot be read refuses the request.
func (v NovaValidator) checkKeystone(ctx context.Context, nova *novav1alpha1.Nova) (field.ErrorList, error) {
	if v.ControlPlanes == nil {
		return nil, errors.New("the Nova webhook has no ControlPlane reader")
	}
	cp, err := keystonepolicy.ControlPlaneOf(ctx, v.ControlPlanes, nova)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return v.Keystone.Check(nova, cp), nil
}

// keystoneChanged tells whether an update touches what the Keystone
// policy decides on: a Keystone URL, or a controller reference set or
// replaced, which makes the Nova a ControlPlane's child. A reference
// removed is not checked here, since the garbage collector removes it
// when it orphans a child and must not be refused; the controllers
// refuse such a Nova if its hosts are no longer admitted.
func keystoneChanged(old, nova *novav1alpha1.Nova) bool {
	rc := func(n *novav1alpha1.Nova) string {
		if n.Spec.RemoteCompute == nil {
			return ""
		}
		return n.Spec.RemoteCompute.KeystoneEndpoint
	}
	return old.Spec.KeystoneEndpoint != nova.Spec.KeystoneEndpoint ||
		old.Spec.KeystonePublicEndpoint != nova.Spec.KeystonePublicEndpoint || rc(old) != rc(nova) ||
		(metav1.GetControllerOf(nova) != nil && !equality.Semantic.DeepEqual(metav1.GetControllerOf(old), metav1.GetControllerOf(nova)))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (NovaValidator) ValidateDelete(context.Context, *novav1alpha1.Nova) (admission.Warnings, error) {
	return nil, nil
}

// ValidateNova returns every problem with a Nova that its schema cannot
// catch. It is pure, so the rules are table-tested without an apiserver.
func ValidateNova(nova *novav1alpha1.Nova) field.ErrorList {
	return redactUserInfo(validateNova(nova))
}

// validateNova holds the rules of ValidateNova; the exported function redacts what
// its errors would echo.
func validateNova(nova *novav1alpha1.Nova) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if rc := nova.Spec.RemoteCompute; rc != nil {
		if nova.Spec.Messaging.TLS == nil {
			errs = append(errs, field.Required(spec.Child("messaging", "tls"),
				"remoteCompute requires messaging.tls: a compute on another cluster verifies the broker against the messaging CA bundle"))
		}
		errs = append(errs, validateURL(spec.Child("remoteCompute", "keystoneEndpoint"), rc.KeystoneEndpoint, true)...)
		if rc.TransportURLSecretRef.Name == "" {
			errs = append(errs, field.Required(spec.Child("remoteCompute", "transportURLSecretRef", "name"), "the Secret with the external transport URL must be named"))
		}
	}
	errs = append(errs, validateURL(spec.Child("keystoneEndpoint"), nova.Spec.KeystoneEndpoint, false)...)
	if nova.Spec.KeystonePublicEndpoint != "" {
		errs = append(errs, validateURL(spec.Child("keystonePublicEndpoint"), nova.Spec.KeystonePublicEndpoint, false)...)
	}
	return errs
}

// validateURL checks that raw is one line, parses, names a host and, when
// httpsOnly, uses https. The value is echoed only when it holds no
// credential, since an admission error is shown to whoever applied it.
func validateURL(path *field.Path, raw string, httpsOnly bool) field.ErrorList {
	shown := "<redacted>"
	if strings.ContainsAny(raw, "\r\n") {
		return field.ErrorList{field.Invalid(path, shown, "must be a single line")}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return field.ErrorList{field.Invalid(path, shown, "is not a valid URL")}
	}
	if u.User != nil {
		return field.ErrorList{field.Invalid(path, shown, "must not carry a user name or password")}
	}
	// A URL without "//", such as "nova:secret@keystone", parses with no
	// user info; redactUserInfo hides such a value from every error.
	shown = raw
	var errs field.ErrorList
	if u.Host == "" || u.Hostname() == "" {
		errs = append(errs, field.Invalid(path, shown, "must name a host"))
	}
	switch {
	case httpsOnly && u.Scheme != "https":
		errs = append(errs, field.Invalid(path, shown, "must use https: computes on other clusters reach Keystone over the public network"))
	case u.Scheme != "http" && u.Scheme != "https":
		errs = append(errs, field.Invalid(path, shown, "must use http or https"))
	}
	return errs
}

func toInvalid(nova *novav1alpha1.Nova, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(novav1alpha1.GroupVersion.WithKind("Nova").GroupKind(), nova.Name, errs)
}
