package webhook

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/keystonepolicy"
)

// +kubebuilder:webhook:path=/validate-c5c3-io-v1alpha1-controlplane,mutating=false,failurePolicy=fail,sideEffects=None,groups=c5c3.io,resources=controlplanes,verbs=create;update,versions=v1alpha1,name=vcontrolplane.c5c3.io,admissionReviewVersions=v1

// ControlPlaneValidator checks the cross-field rules of a ControlPlane that
// its schema cannot express: which referenced services and which bus a Nova
// needs, what computes on other clusters need to reach them, and which
// Keystone hosts the operator lets it name.
type ControlPlaneValidator struct {
	// Keystone is the operator's --allowed-keystone-hosts: Anvil sends the
	// cloud's admin password to the ControlPlane's Keystone.
	Keystone keystonepolicy.Policy
}

var _ admission.Validator[*c5c3v1alpha1.ControlPlane] = ControlPlaneValidator{}

// SetupControlPlaneWebhook registers the ControlPlane validator with the
// manager's webhook server.
func SetupControlPlaneWebhook(mgr ctrl.Manager, keystone keystonepolicy.Policy) error {
	return ctrl.NewWebhookManagedBy(mgr, &c5c3v1alpha1.ControlPlane{}).WithValidator(ControlPlaneValidator{Keystone: keystone}).Complete()
}

// ValidateCreate implements admission.Validator.
func (v ControlPlaneValidator) ValidateCreate(_ context.Context, cp *c5c3v1alpha1.ControlPlane) (admission.Warnings, error) {
	return nil, controlPlaneInvalid(cp, append(ValidateControlPlane(cp, nil), v.Keystone.CheckControlPlane(cp)...))
}

// ValidateUpdate implements admission.Validator. The old object matters only
// for the name rule, which an existing Nova must not trip over.
func (v ControlPlaneValidator) ValidateUpdate(_ context.Context, old, cp *c5c3v1alpha1.ControlPlane) (admission.Warnings, error) {
	return nil, controlPlaneInvalid(cp, append(ValidateControlPlane(cp, old), v.Keystone.CheckControlPlane(cp)...))
}

// ValidateDelete implements admission.Validator; deletion is always allowed.
func (ControlPlaneValidator) ValidateDelete(context.Context, *c5c3v1alpha1.ControlPlane) (admission.Warnings, error) {
	return nil, nil
}

// remoteReachDetail ends every message that asks for a public endpoint, so
// that the reason reads the same for each service.
const remoteReachDetail = "computes on other clusters cannot reach the in-cluster endpoint and call the public one instead"

// ValidateControlPlane returns every cross-field problem of a ControlPlane.
// old is nil on create; on update it is the stored object. It is pure, so the
// rules are table-tested without an apiserver.
func ValidateControlPlane(cp, old *c5c3v1alpha1.ControlPlane) field.ErrorList {
	return redactUserInfo(validateControlPlane(cp, old))
}

// validateControlPlane holds the rules of ValidateControlPlane; the exported function redacts what
// its errors would echo.
func validateControlPlane(cp, old *c5c3v1alpha1.ControlPlane) field.ErrorList {
	services := field.NewPath("spec", "services")
	// Endpoint URLs are checked whether or not Nova is set: a URL that
	// carries a password must not sit in a spec every reader can see, and
	// a malformed one would only fail later, when a service starts to use it.
	errs := validateServiceEndpoints(cp.Spec.Services, services)
	errs = append(errs, validateOVNCentralRef(cp, services.Child("neutron", "ovn", "centralRef"))...)
	if cp.Spec.Services.Nova == nil {
		return errs
	}
	return append(errs, validateNovaService(cp, old)...)
}

// validateServiceEndpoints checks the URLs of Keystone and of every
// referenced service.
func validateServiceEndpoints(svc c5c3v1alpha1.ServicesSpec, services *field.Path) field.ErrorList {
	var errs field.ErrorList
	if ks := svc.Keystone; ks != nil {
		errs = append(errs, validateURL(services.Child("keystone", "internalEndpoint"), ks.InternalEndpoint, false)...)
		if ks.PublicEndpoint != "" {
			errs = append(errs, validateURL(services.Child("keystone", "publicEndpoint"), ks.PublicEndpoint, false)...)
		}
	}
	for _, ref := range referencedServices(svc) {
		if ref.spec == nil {
			continue
		}
		p := services.Child(ref.name)
		if ref.spec.InternalEndpoint != "" {
			errs = append(errs, validateURL(p.Child("internalEndpoint"), ref.spec.InternalEndpoint, false)...)
		}
		if ref.spec.PublicEndpoint != "" {
			errs = append(errs, validateURL(p.Child("publicEndpoint"), ref.spec.PublicEndpoint, false)...)
		}
	}
	return errs
}

// validateNovaService holds the rules that apply only when services.nova is set.
func validateNovaService(cp, old *c5c3v1alpha1.ControlPlane) field.ErrorList {
	services := field.NewPath("spec", "services")
	novaPath := services.Child("nova")
	svc := cp.Spec.Services
	nova := svc.Nova
	var errs field.ErrorList
	// The compute URLs go into the Keystone catalog, which every
	// authenticated user reads.
	for name, raw := range map[string]string{"internalEndpoint": nova.InternalEndpoint, "publicEndpoint": nova.PublicEndpoint} {
		if raw != "" {
			errs = append(errs, validateURL(novaPath.Child(name), raw, false)...)
		}
	}
	errs = append(errs, validateNovaName(cp, old)...)
	errs = append(errs, validateMessaging(cp)...)
	errs = append(errs, validateNovaDependencies(svc, services)...)
	errs = append(errs, validateNovaGateways(nova, novaPath)...)
	if nova.RemoteCompute != nil {
		errs = append(errs, validateRemoteCompute(cp, novaPath.Child("remoteCompute"))...)
	}
	return append(errs, validateKeystoneAdmin(svc, services)...)
}

// validateNovaName keeps the projected Nova's name within its limit.
func validateNovaName(cp, old *c5c3v1alpha1.ControlPlane) field.ErrorList {
	if len(cp.Name) <= c5c3v1alpha1.MaxNameLengthWithNova || (old != nil && old.Spec.Services.Nova != nil) {
		// Only on create or when Nova is newly enabled: a ControlPlane that
		// already runs a Nova keeps working, and refusing every later update
		// would strand it.
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), cp.Name, fmt.Sprintf(
		"must be at most %d characters when services.nova is set: the projected Nova is named %s%s, and a Nova's name may be at most %d characters",
		c5c3v1alpha1.MaxNameLengthWithNova, cp.Name, c5c3v1alpha1.NovaSuffix, c5c3v1alpha1.MaxNameLengthWithNova+len(c5c3v1alpha1.NovaSuffix)))}
}

// validateMessaging requires the bus Nova uses, since Anvil runs none.
func validateMessaging(cp *c5c3v1alpha1.ControlPlane) field.ErrorList {
	if cp.Spec.Infrastructure.Messaging != nil {
		return nil
	}
	return field.ErrorList{field.Required(field.NewPath("spec", "infrastructure", "messaging"),
		"is required when services.nova is set: Anvil runs no message broker, so the platform must name the bus Nova uses in spec.infrastructure.messaging.secretRef")}
}

// validateNovaDependencies requires the services Nova calls. They report
// each missing service once; the remote rules skip an undeclared service so
// that it is not reported twice.
func validateNovaDependencies(svc c5c3v1alpha1.ServicesSpec, services *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, dep := range []struct {
		name     string
		declared bool
		why      string
	}{
		{"keystone", svc.Keystone != nil, "Nova authenticates every request against Keystone and finds the other services in its catalog"},
		{"placement", svc.Placement != nil, "the Nova scheduler picks hosts through the placement service"},
		{"neutron", svc.Neutron != nil, "Nova binds the ports of every server through Neutron"},
		{"glance", svc.Glance != nil, "Nova boots servers from Glance images"},
	} {
		if !dep.declared {
			errs = append(errs, field.Required(services.Child(dep.name), "is required when services.nova is set: "+dep.why))
		}
	}
	return errs
}

// validateNovaGateways checks the metadata gateway and the console proxy,
// which the Nova exposes through HTTPRoutes.
func validateNovaGateways(nova *c5c3v1alpha1.NovaServiceSpec, novaPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if mg := nova.MetadataGateway; mg != nil && mg.Path != "" && mg.Path != "/" {
		// The metadata API answers at fixed paths below the root, which an
		// instance asks for verbatim; a prefix would hide them.
		errs = append(errs, field.Invalid(novaPath.Child("metadataGateway", "path"), mg.Path,
			`must be empty or "/": instances ask for the metadata API at fixed paths from the root of its hostname`))
	}
	if mg := nova.MetadataGateway; mg != nil && mg.ParentRef == nil {
		// The Nova writes an HTTPRoute, and a route without a parent is
		// served by no Gateway.
		errs = append(errs, field.Required(novaPath.Child("metadataGateway", "parentRef"),
			"is required: the metadata API's HTTPRoute attaches to this Gateway"))
	}
	if mg, cons := nova.MetadataGateway, nova.ConsoleProxy; mg != nil && cons != nil &&
		mg.Hostname != "" && cons.Hostname != "" && strings.EqualFold(mg.Hostname, cons.Hostname) {
		errs = append(errs, field.Invalid(novaPath.Child("consoleProxy", "hostname"), cons.Hostname,
			"must differ from services.nova.metadataGateway.hostname: both are routed by hostname alone, so one hostname cannot lead to two Nova endpoints"))
	}
	return errs
}

// validateKeystoneAdmin requires Keystone's admin credentials when Anvil
// must create users in Keystone itself.
func validateKeystoneAdmin(svc c5c3v1alpha1.ServicesSpec, services *field.Path) field.ErrorList {
	if svc.Keystone == nil || svc.Keystone.AdminCredentialsSecretRef != nil {
		return nil
	}
	nova := svc.Nova
	if nova.HypervisorOperator != nil {
		return field.ErrorList{field.Required(services.Child("keystone", "adminCredentialsSecretRef"),
			"is required when services.nova.hypervisorOperator is set: Anvil creates the hypervisor operator's user and project in Keystone with these admin credentials")}
	}
	if rc := nova.RemoteCompute; rc != nil && rc.Credentials == c5c3v1alpha1.PerClusterCredentials {
		return field.ErrorList{field.Required(services.Child("keystone", "adminCredentialsSecretRef"),
			"is required when services.nova.remoteCompute.credentials is PerCluster: Anvil creates each compute cluster's user in Keystone with these admin credentials")}
	}
	return nil
}

// validateRemoteCompute checks what a compute on another cluster needs: a
// bus it can verify, and a public endpoint of every service it calls.
func validateRemoteCompute(cp *c5c3v1alpha1.ControlPlane, remotePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	services := spec.Child("services")
	svc := cp.Spec.Services

	switch messaging := cp.Spec.Infrastructure.Messaging; {
	case messaging == nil:
		// The missing block itself is reported by the messaging rule; this
		// says why remoteCompute in particular cannot go without it.
		errs = append(errs, field.Forbidden(remotePath,
			"requires a brownfield bus with tls (spec.infrastructure.messaging.secretRef and spec.infrastructure.messaging.tls): Anvil runs no broker, so the platform must provide one with a TLS listener that compute clusters reach across the cluster boundary"))
	case messaging.TLS == nil:
		errs = append(errs, field.Required(spec.Child("infrastructure", "messaging", "tls"),
			"is required when services.nova.remoteCompute is set: a compute on another cluster reaches the broker across a cluster boundary and must verify it against this CA bundle"))
	}

	if rc := svc.Nova.RemoteCompute; rc.BrokerAdminSecretRef != nil && rc.Credentials != c5c3v1alpha1.PerClusterCredentials {
		errs = append(errs, field.Forbidden(remotePath.Child("brokerAdminSecretRef"),
			"is only used with credentials PerCluster: the broker users it creates are the compute clusters' own, and with Shared credentials every cluster logs in as the user of transportURLSecretRef"))
	}

	if ks := svc.Keystone; ks != nil {
		public := services.Child("keystone", "publicEndpoint")
		switch {
		case ks.PublicEndpoint == "" && ks.Gateway == nil:
			errs = append(errs, field.Required(public,
				"one of publicEndpoint or gateway is required when services.nova.remoteCompute is set: "+remoteReachDetail))
		case ks.PublicEndpoint != "" && len(validateURL(public, ks.PublicEndpoint, false)) == 0:
			// A URL the generic checks reject is already reported, and
			// only a clean one may be echoed back.
			if u, err := url.Parse(ks.PublicEndpoint); err == nil && u.Scheme != "https" {
				errs = append(errs, field.Invalid(public, ks.PublicEndpoint,
					"must use scheme https when services.nova.remoteCompute is set: computes on other clusters send the nova service user's password to it over networks outside this cluster"))
			}
		}
	}

	for _, ref := range referencedServices(svc) {
		if ref.spec == nil {
			// Required placement, neutron and glance are reported by the
			// dependency rules; cinder and barbican are optional.
			continue
		}
		if ref.spec.PublicEndpoint == "" && ref.spec.Gateway == nil {
			errs = append(errs, field.Required(services.Child(ref.name, "publicEndpoint"),
				"one of publicEndpoint or gateway is required when services.nova.remoteCompute is set: "+remoteReachDetail))
		}
	}
	return errs
}

// namedService pairs a referenced service with its JSON field name.
type namedService struct {
	name string
	spec *c5c3v1alpha1.ReferencedService
}

// referencedServices lists the services a ControlPlane references by
// endpoint, other than Keystone, in a fixed order so that errors are stable.
func referencedServices(svc c5c3v1alpha1.ServicesSpec) []namedService {
	return []namedService{
		{"placement", svc.Placement},
		{"neutron", neutronService(svc.Neutron)},
		{"glance", svc.Glance},
		{"cinder", svc.Cinder},
		{"barbican", svc.Barbican},
	}
}

// controlPlaneInvalid turns the errors into the apiserver's 422 Invalid,
// which lists every field at once, or nil when there are none.
func controlPlaneInvalid(cp *c5c3v1alpha1.ControlPlane, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(c5c3v1alpha1.GroupVersion.WithKind("ControlPlane").GroupKind(), cp.Name, errs)
}

// neutronService is Neutron's endpoints, or nil when Neutron is not
// declared.
func neutronService(n *c5c3v1alpha1.NeutronServiceSpec) *c5c3v1alpha1.ReferencedService {
	if n == nil {
		return nil
	}
	return &n.ReferencedService
}

// validateOVNCentralRef refuses a central in another namespace: one central
// serves one ControlPlane, and a ControlPlane reads nothing outside its own
// namespace. The controller checks it again before reading the central.
func validateOVNCentralRef(cp *c5c3v1alpha1.ControlPlane, p *field.Path) field.ErrorList {
	n := cp.Spec.Services.Neutron
	if n == nil || n.OVN == nil {
		return nil
	}
	ref := n.OVN.CentralRef
	var errs field.ErrorList
	if ref.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "names the OVNCentral Neutron uses"))
	}
	if ns := ref.ResolvedNamespace(cp.Namespace); ns != cp.Namespace {
		errs = append(errs, field.Invalid(p.Child("namespace"), ref.Namespace,
			"must be empty or the ControlPlane's namespace "+cp.Namespace+": a ControlPlane reads its OVNCentral only from its own namespace"))
	}
	return errs
}
