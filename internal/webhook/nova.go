package webhook

import (
	"context"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-nova-openstack-c5c3-io-v1alpha1-nova,mutating=false,failurePolicy=fail,sideEffects=None,groups=nova.openstack.c5c3.io,resources=novas,verbs=create;update,versions=v1alpha1,name=vnova.openstack.c5c3.io,admissionReviewVersions=v1

// NovaValidator checks a Nova beyond its schema.
type NovaValidator struct{}

// SetupNovaWebhook registers the validator with the manager's webhook server.
func SetupNovaWebhook(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &novav1alpha1.Nova{}).WithValidator(NovaValidator{}).Complete()
}

// ValidateCreate implements admission.Validator.
func (NovaValidator) ValidateCreate(_ context.Context, nova *novav1alpha1.Nova) (admission.Warnings, error) {
	return nil, toInvalid(nova, ValidateNova(nova))
}

// ValidateUpdate implements admission.Validator.
func (NovaValidator) ValidateUpdate(_ context.Context, _, nova *novav1alpha1.Nova) (admission.Warnings, error) {
	return nil, toInvalid(nova, ValidateNova(nova))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (NovaValidator) ValidateDelete(context.Context, *novav1alpha1.Nova) (admission.Warnings, error) {
	return nil, nil
}

// ValidateNova returns every problem with a Nova that its schema cannot
// catch. It is pure, so the rules are table-tested without an apiserver.
func ValidateNova(nova *novav1alpha1.Nova) field.ErrorList {
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
	if u.User == nil {
		shown = raw
	} else {
		return field.ErrorList{field.Invalid(path, shown, "must not carry a user name or password")}
	}
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
