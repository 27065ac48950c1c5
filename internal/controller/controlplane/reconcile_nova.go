package controlplane

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

// Default keys of the Secrets a ControlPlane reads.
const (
	transportURLKey = "transport_url"
	caBundleKey     = "ca.crt"
	passwordKey     = "password"
	sharedSecretKey = "shared_secret"
)

// NovaName is the name of the Nova a ControlPlane projects.
func NovaName(cp *c5c3v1alpha1.ControlPlane) string { return cp.Name + c5c3v1alpha1.NovaSuffix }

// reconcileNova delivers the Nova's inputs and projects it, then waits
// until it is Ready for the applied generation and deletes the inputs it
// no longer reads.
func (r *Reconciler) reconcileNova(ctx context.Context, p *pass) (flow.Outcome, error) {
	cp := p.cp
	if cp.Spec.Services.Nova == nil {
		setNovaReady(cp, c5c3v1alpha1.NovaNotManagedReason, "services.nova is not set")
		return flow.Continue, nil
	}
	if cp.Spec.Infrastructure.Messaging == nil || cp.Spec.Services.Keystone == nil {
		return flow.Continue, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason,
			errors.New("services.nova needs spec.infrastructure.messaging and spec.services.keystone"))
	}
	nova, err := r.deliverAndProject(ctx, p)
	if err != nil {
		return flow.Continue, novaError(err)
	}
	switch DecideNovaGate(nova) {
	case NovaInstalling:
		return flow.Continue, waitForNova(nova)
	case NovaRolling:
		// The compute clusters get the change now, not after the Nova's
		// rollout: the mirror step renders it from the applied Nova, and
		// reportDeliveries keeps NovaReady waiting until the Nova is Ready.
		p.nova, p.novaRolling = nova, true
		return flow.Continue, nil
	}
	if err := r.reapReleased(ctx, cp); err != nil {
		return flow.Continue, novaError(err)
	}
	p.nova = nova
	return flow.Continue, nil
}

// novaError reports a failure the projection did not classify under
// NovaError, retried with backoff.
func novaError(err error) error {
	var step *flow.StepError
	if errors.As(err, &step) {
		return err
	}
	return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason, err)
}

// deliverAndProject writes the child's input Secrets and the child itself.
// With a missing hand-over nothing is written in this pass.
func (r *Reconciler) deliverAndProject(ctx context.Context, p *pass) (*novav1alpha1.Nova, error) {
	cp := p.cp
	svc := cp.Spec.Services.Nova
	msg := cp.Spec.Infrastructure.Messaging

	busURL, err := r.readKey(ctx, cp, "spec.infrastructure.messaging.secretRef", msg.SecretRef, transportURLKey, c5c3v1alpha1.WaitingForMessagingReason)
	if err != nil {
		return nil, err
	}
	var ca string
	if msg.TLS != nil {
		if ca, err = r.readKey(ctx, cp, "spec.infrastructure.messaging.tls.caBundleSecretRef", msg.TLS.CABundleSecretRef, caBundleKey, c5c3v1alpha1.WaitingForMessagingReason); err != nil {
			return nil, err
		}
	}
	var remoteURL string
	if rc := svc.RemoteCompute; rc != nil {
		remoteURL, err = r.readKey(ctx, cp, "services.nova.remoteCompute.transportURLSecretRef", rc.TransportURLSecretRef, transportURLKey, c5c3v1alpha1.WaitingForRemoteMessagingReason)
		if err != nil {
			return nil, err
		}
		if err := novaconfig.CheckTransportURL(remoteURL); err != nil {
			return nil, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaRemoteMessagingErrorReason,
				fmt.Errorf("services.nova.remoteCompute.transportURLSecretRef: %w", err))
		}
	}

	// Every read succeeded: from here on the pass writes, and keeps what
	// it wrote for the mirror step's rendering (see deliveredReader).
	p.delivered = map[string]map[string][]byte{}
	same := func(err error) error { return err }
	if err := r.deliverInput(ctx, p, cp.Name+c5c3v1alpha1.NovaMessagingSuffix, map[string][]byte{transportURLKey: []byte(busURL)}, same); err != nil {
		return nil, err
	}
	if msg.TLS != nil {
		if err := r.deliverInput(ctx, p, cp.Name+c5c3v1alpha1.NovaMessagingCASuffix, map[string][]byte{caBundleKey: []byte(ca)}, same); err != nil {
			return nil, err
		}
	}
	if svc.RemoteCompute != nil {
		remote := func(err error) error {
			return flow.Fail(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaRemoteMessagingErrorReason, err)
		}
		if err := r.deliverInput(ctx, p, cp.Name+c5c3v1alpha1.NovaRemoteMessagingSuffix, map[string][]byte{transportURLKey: []byte(remoteURL)}, remote); err != nil {
			return nil, err
		}
	}
	if svc.MetadataSharedSecretRef == nil {
		if err := r.ensureGeneratedMetadataSecret(ctx, cp); err != nil {
			return nil, err
		}
	}
	return r.projectNova(ctx, p)
}

// projectNova applies {cp}-nova from the ControlPlane's spec and returns it
// as the cluster has it, or, when the apply runs while the mirrors are
// written (applyAhead), as the apply will leave it.
func (r *Reconciler) projectNova(ctx context.Context, p *pass) (*novav1alpha1.Nova, error) {
	desired, err := BuildNovaSpec(p.cp)
	if err != nil {
		return nil, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason, err)
	}
	if predicted := r.applyAhead(ctx, p, desired); predicted != nil {
		return predicted, nil
	}
	return r.applyNova(ctx, p.cp, desired)
}

// applyNova applies {cp}-nova with desired and returns it as the cluster
// has it. A Nova of that name the ControlPlane does not own is left
// untouched and reported.
func (r *Reconciler) applyNova(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, desired novav1alpha1.NovaSpec) (*novav1alpha1.Nova, error) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: NovaName(cp), Namespace: cp.Namespace}, Spec: desired}
	err := childwriter.Local(r.Client, r.Scheme).Apply(ctx, cp, nova)
	var notOwned *childwriter.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		return nil, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason,
			fmt.Errorf("the Nova %s/%s exists and is not owned by this ControlPlane; it is left untouched", nova.Namespace, nova.Name))
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err):
		// An admission refusal; the apiserver's message names the field.
		return nil, flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaProjectionRejectedReason, err)
	case err != nil:
		return nil, err
	}
	return nova, nil
}

// BuildNovaSpec renders the spec of {cp}-nova from the ControlPlane. It is
// pure: the names it uses are those of the Secrets the ControlPlane writes.
func BuildNovaSpec(cp *c5c3v1alpha1.ControlPlane) (novav1alpha1.NovaSpec, error) {
	svc := cp.Spec.Services.Nova
	ks := cp.Spec.Services.Keystone
	spec := novav1alpha1.NovaSpec{
		OpenStackRelease:       svc.OpenStackRelease,
		Image:                  svc.Image,
		KeystoneEndpoint:       ks.InternalEndpoint,
		KeystonePublicEndpoint: PublicKeystoneURL(ks),
		Region:                 ks.Region,
		ServiceUser: novav1alpha1.ServiceUserSpec{
			Username: "nova", ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default",
			SecretRef: novav1alpha1.PasswordSecretRef{Name: svc.ServiceUserSecretRef.Name, Key: cmp.Or(svc.ServiceUserSecretRef.Key, passwordKey)},
		},
	}
	spec.Messaging.SecretRef = novav1alpha1.TransportURLSecretRef{Name: cp.Name + c5c3v1alpha1.NovaMessagingSuffix, Key: transportURLKey}
	if cp.Spec.Infrastructure.Messaging.TLS != nil {
		spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{
			Name: cp.Name + c5c3v1alpha1.NovaMessagingCASuffix, Key: caBundleKey}}
	}
	spec.Metadata.SharedSecretRef = novav1alpha1.SharedSecretRef{Name: cp.Name + c5c3v1alpha1.NovaMetadataSecretSuffix, Key: sharedSecretKey}
	if ref := svc.MetadataSharedSecretRef; ref != nil {
		spec.Metadata.SharedSecretRef = novav1alpha1.SharedSecretRef{Name: ref.Name, Key: cmp.Or(ref.Key, sharedSecretKey)}
	}
	if mg := svc.MetadataGateway; mg != nil && mg.ParentRef != nil {
		// The webhook requires the parent; a ControlPlane that slipped past
		// it gets no route rather than one no Gateway serves.
		spec.Metadata.Gateway = &novav1alpha1.GatewaySpec{Hostname: mg.Hostname, ParentRef: novav1alpha1.GatewayParentRef{
			Name: mg.ParentRef.Name, Namespace: mg.ParentRef.Namespace, SectionName: mg.ParentRef.SectionName,
		}}
	}
	s := cp.Spec.Services
	spec.Endpoints.Placement.Override = internalOf(s.Placement)
	spec.Endpoints.Neutron.Override = internalOf(neutronService(s.Neutron))
	spec.Endpoints.Glance.Override = internalOf(s.Glance)
	spec.Endpoints.Cinder = novav1alpha1.OptionalEndpoint{Enabled: s.Cinder != nil, Override: internalOf(s.Cinder)}
	spec.Endpoints.Barbican = novav1alpha1.OptionalEndpoint{Enabled: s.Barbican != nil, Override: internalOf(s.Barbican)}
	// Set only when the ControlPlane sets it: an apply without the field
	// removes it whole, so the Nova reads as one that never had it, where
	// an emptied object would be left as null.
	if c := svc.ConsoleProxy; c != nil {
		spec.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Enabled: c.Enabled, Hostname: c.Hostname}
	}
	spec.Replicas = svc.Replicas
	spec.APIDatabase = novaDatabase(svc.APIDatabase)
	spec.Database = novaDatabase(svc.Database)
	if svc.RemoteCompute != nil {
		public := PublicKeystoneURL(ks)
		if !strings.HasPrefix(public, "https://") {
			return spec, errors.New("services.nova.remoteCompute needs an https public Keystone (services.keystone.publicEndpoint or gateway)")
		}
		spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{
			KeystoneEndpoint:      public,
			TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: cp.Name + c5c3v1alpha1.NovaRemoteMessagingSuffix, Key: transportURLKey},
		}
	}
	return spec, nil
}

// novaDatabase projects a ControlPlane database onto the Nova's. The Nova
// lives in the ControlPlane's namespace, so it reads the named Secret where
// it is; nothing is copied. A zero port is the API default, 3306, which a
// ControlPlane built without the apiserver's defaulting may lack.
func novaDatabase(db *c5c3v1alpha1.DatabaseSpec) *novav1alpha1.DatabaseSpec {
	if db == nil {
		return nil
	}
	return &novav1alpha1.DatabaseSpec{
		Host: db.Host, Port: cmp.Or(db.Port, novav1alpha1.DefaultDatabasePort), Database: db.Database,
		SecretRef: novav1alpha1.DatabaseSecretRef{Name: db.SecretName},
	}
}

// PublicKeystoneURL is the Keystone URL clients outside the cluster use:
// the declared public endpoint, else https://<gateway hostname>/v3.
func PublicKeystoneURL(ks *c5c3v1alpha1.KeystoneSpec) string {
	switch {
	case ks.PublicEndpoint != "":
		return ks.PublicEndpoint
	case ks.Gateway != nil && ks.Gateway.Hostname != "":
		return "https://" + ks.Gateway.Hostname + "/v3"
	}
	return ""
}

func internalOf(s *c5c3v1alpha1.ReferencedService) string {
	if s == nil {
		return ""
	}
	return s.InternalEndpoint
}

// waitForNova is the wait of a pass whose Nova is not Ready for the
// generation last applied.
func waitForNova(nova *novav1alpha1.Nova) error {
	return flow.Wait(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.WaitingForNovaReason, waitRequeue,
		"waiting for Nova %s to be Ready for generation %d", nova.Name, nova.Generation)
}

// NovaGate is what a ControlPlane pass may do with its Nova.
type NovaGate int

const (
	// NovaInstalling means the Nova has never published a contract. Its control
	// plane does not exist yet, so no compute cluster could use one, and
	// the pass waits for the Nova.
	NovaInstalling NovaGate = iota
	// NovaRolling means the Nova published a contract before, and is not Ready
	// for the generation last applied. The mirrors take the change at once;
	// the catalog, the hypervisor operator's account, the release of
	// inputs and NovaReady wait for the Nova.
	NovaRolling
	// NovaSettled means the Nova is Ready for the generation last applied.
	NovaSettled
)

// DecideNovaGate tells what a pass may do with the Nova it applied. It does
// not look at the Nova's ComputeConfigReady: the mirror step renders the
// contract from the applied Nova with the code the Nova publishes with, so
// it refuses exactly what the Nova would refuse, without waiting on Nova
// passes that are busy rolling Deployments. It is pure, so the rules are
// table-tested.
func DecideNovaGate(nova *novav1alpha1.Nova) NovaGate {
	switch {
	case childReady(nova):
		return NovaSettled
	case nova.Status.ComputeConfigSecretRef == nil:
		return NovaInstalling
	default:
		return NovaRolling
	}
}

// childReady tells whether the Nova is Ready for the generation last applied.
func childReady(nova *novav1alpha1.Nova) bool {
	c := apimeta.FindStatusCondition(nova.Status.Conditions, anvilmeta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && nova.Status.ObservedGeneration >= nova.Generation
}

// readKey returns a non-empty Secret value from the ControlPlane's
// namespace; a missing Secret or key is a wait under reason.
func (r *Reconciler) readKey(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, field string, ref c5c3v1alpha1.SecretKeyRef, defKey, reason string) (string, error) {
	v, err := inputs.ReadKey(ctx, r.Client, cp.Namespace, field, ref.Name, cmp.Or(ref.Key, defKey))
	var missing *inputs.MissingError
	if errors.As(err, &missing) {
		return "", flow.Wait(c5c3v1alpha1.NovaReadyCondition, reason, waitRequeue, "%s", err.Error())
	}
	return v, err
}

// applyLocalSecret makes a ControlPlane-owned Secret on the management
// cluster hold exactly data. A foreign Secret of that name is refused and
// reported under NovaError.
func (r *Reconciler) applyLocalSecret(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, name string, data map[string][]byte, opts ...childwriter.ApplyOption) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cp.Namespace}, Type: corev1.SecretTypeOpaque, Data: data}
	err := childwriter.Local(r.Client, r.Scheme).Apply(ctx, cp, s, opts...)
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason, err)
	}
	return err
}

// ensureGeneratedMetadataSecret writes {cp}-nova-metadata-secret once, when
// it does not exist, or anew when its value is not one Anvil generated. It
// is never rotated by Anvil otherwise: deleting it makes a new one.
func (r *Reconciler) ensureGeneratedMetadataSecret(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) error {
	name := cp.Name + c5c3v1alpha1.NovaMetadataSecretSuffix
	secret, err := randomSecret()
	if err != nil {
		return err
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cp.Namespace},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{sharedSecretKey: []byte(secret)},
	}
	_, err = r.ensureGenerated(ctx, cp, s, sharedSecretKey, false)
	var notOwned *childwriter.NotOwnedError
	if errors.As(err, &notOwned) {
		return flow.Invalid(c5c3v1alpha1.NovaReadyCondition, c5c3v1alpha1.NovaErrorReason, err)
	}
	return err
}

// reapReleased deletes the Secrets the child no longer reads, now that it
// has observed the spec without them.
func (r *Reconciler) reapReleased(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) error {
	var names []string
	if cp.Spec.Services.Nova.RemoteCompute == nil {
		names = append(names, cp.Name+c5c3v1alpha1.NovaRemoteMessagingSuffix)
	}
	if cp.Spec.Infrastructure.Messaging.TLS == nil {
		names = append(names, cp.Name+c5c3v1alpha1.NovaMessagingCASuffix)
	}
	if cp.Spec.Services.Nova.MetadataSharedSecretRef != nil {
		names = append(names, cp.Name+c5c3v1alpha1.NovaMetadataSecretSuffix)
	}
	local := childwriter.Local(r.Client, r.Scheme)
	for _, name := range names {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cp.Namespace, Name: name}}
		if _, err := local.Delete(ctx, cp, s); err != nil {
			return err
		}
	}
	return nil
}

// neutronService is Neutron's endpoints, or nil when Neutron is not
// declared.
func neutronService(n *c5c3v1alpha1.NeutronServiceSpec) *c5c3v1alpha1.ReferencedService {
	if n == nil {
		return nil
	}
	return &n.ReferencedService
}
