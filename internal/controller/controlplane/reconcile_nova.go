package controlplane

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

// Default keys of the Secrets a ControlPlane reads.
const (
	transportURLKey = "transport_url"
	caBundleKey     = "ca.crt"
	passwordKey     = "password"
	sharedSecretKey = "shared_secret"
)

// defaultDatabasePort is the API default of a database's port.
const defaultDatabasePort = 3306

// NovaName is the name of the Nova a ControlPlane projects.
func NovaName(cp *c5c3v1alpha1.ControlPlane) string { return cp.Name + c5c3v1alpha1.NovaSuffix }

// waitError is an input that is not there yet; it carries the NovaReady
// reason to report and never a value.
type waitError struct {
	reason, message string
}

func (e *waitError) Error() string { return e.message }

// novaFailure is a failure reported under its own NovaReady reason.
type novaFailure struct {
	reason string
	err    error
}

func (e *novaFailure) Error() string { return e.err.Error() }
func (e *novaFailure) Unwrap() error { return e.err }

// reconcileNova delivers the Nova's inputs, projects it and, once it is
// Ready for the applied generation, mirrors its contract.
func (r *Reconciler) reconcileNova(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) (flow.Outcome, error) {
	svc := cp.Spec.Services.Nova
	if svc == nil {
		setNovaReady(cp, metav1.ConditionTrue, c5c3v1alpha1.NovaNotManagedReason, "services.nova is not set")
		return flow.Continue, nil
	}
	if cp.Spec.Infrastructure.Messaging == nil || cp.Spec.Services.Keystone == nil {
		setNovaReady(cp, metav1.ConditionFalse, c5c3v1alpha1.NovaErrorReason,
			"services.nova needs spec.infrastructure.messaging and spec.services.keystone")
		return flow.Halt, nil
	}

	nova, err := r.deliverAndProject(ctx, cp)
	if err != nil {
		return r.novaFailed(cp, err)
	}
	if !childReady(nova) {
		setNovaReady(cp, metav1.ConditionFalse, c5c3v1alpha1.WaitingForNovaReason,
			fmt.Sprintf("waiting for Nova %s to be Ready for generation %d", nova.Name, nova.Generation))
		return flow.WaitAndHalt(waitRequeue), nil
	}
	if err := r.reapReleased(ctx, cp); err != nil {
		return flow.Continue, err
	}
	return r.reconcileMirrors(ctx, cp, nova)
}

// deliverAndProject writes the child's input Secrets and the child itself.
// With a missing hand-over nothing is written in this pass.
func (r *Reconciler) deliverAndProject(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) (*novav1alpha1.Nova, error) {
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
			return nil, &novaFailure{reason: c5c3v1alpha1.NovaRemoteMessagingErrorReason,
				err: flow.Invalid(fmt.Errorf("services.nova.remoteCompute.transportURLSecretRef: %w", err))}
		}
	}

	// Every read succeeded: from here on the pass writes.
	if err := r.applyLocalSecret(ctx, cp, cp.Name+c5c3v1alpha1.NovaMessagingSuffix, map[string][]byte{transportURLKey: []byte(busURL)}); err != nil {
		return nil, err
	}
	if msg.TLS != nil {
		if err := r.applyLocalSecret(ctx, cp, cp.Name+c5c3v1alpha1.NovaMessagingCASuffix, map[string][]byte{caBundleKey: []byte(ca)}); err != nil {
			return nil, err
		}
	}
	if svc.RemoteCompute != nil {
		if err := r.applyLocalSecret(ctx, cp, cp.Name+c5c3v1alpha1.NovaRemoteMessagingSuffix, map[string][]byte{transportURLKey: []byte(remoteURL)}); err != nil {
			return nil, &novaFailure{reason: c5c3v1alpha1.NovaRemoteMessagingErrorReason, err: err}
		}
	}
	if svc.MetadataSharedSecretRef == nil {
		if err := r.ensureGeneratedMetadataSecret(ctx, cp); err != nil {
			return nil, err
		}
	}
	return r.projectNova(ctx, cp)
}

// projectNova creates or updates {cp}-nova from the ControlPlane's spec.
func (r *Reconciler) projectNova(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) (*novav1alpha1.Nova, error) {
	desired, err := BuildNovaSpec(cp)
	if err != nil {
		return nil, &novaFailure{reason: c5c3v1alpha1.NovaErrorReason, err: flow.Invalid(err)}
	}
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: NovaName(cp), Namespace: cp.Namespace}}
	live := &novav1alpha1.Nova{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(nova), live)
	switch {
	case apierrors.IsNotFound(err):
		nova.Spec = desired
		if err := targetcluster.ClaimLocal(cp, nova, nil, r.Scheme); err != nil {
			return nil, err
		}
		if err := r.Client.Create(ctx, nova); err != nil {
			return nil, projectionError(err)
		}
		return nova, nil
	case err != nil:
		return nil, err
	case !targetcluster.Controls(cp, live, r.Scheme):
		return nil, &novaFailure{reason: c5c3v1alpha1.NovaErrorReason,
			err: flow.Invalid(fmt.Errorf("the Nova %s/%s exists and is not owned by this ControlPlane; it is left untouched", live.Namespace, live.Name))}
	}
	if equality.Semantic.DeepEqual(live.Spec, desired) {
		return live, nil
	}
	live.Spec = desired
	if err := r.Client.Update(ctx, live); err != nil {
		return nil, projectionError(err)
	}
	return live, nil
}

// projectionError reports an admission refusal of the projected Nova under
// its own reason; the apiserver's message names the field.
func projectionError(err error) error {
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
		return &novaFailure{reason: c5c3v1alpha1.NovaProjectionRejectedReason, err: flow.Invalid(err)}
	}
	return err
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
			SecretRef: novav1alpha1.PasswordSecretRef{Name: svc.ServiceUserSecretRef.Name, Key: keyOr(svc.ServiceUserSecretRef.Key, passwordKey)},
		},
	}
	spec.Messaging.SecretRef = novav1alpha1.TransportURLSecretRef{Name: cp.Name + c5c3v1alpha1.NovaMessagingSuffix, Key: transportURLKey}
	if cp.Spec.Infrastructure.Messaging.TLS != nil {
		spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{
			Name: cp.Name + c5c3v1alpha1.NovaMessagingCASuffix, Key: caBundleKey}}
	}
	spec.Metadata.SharedSecretRef = novav1alpha1.SharedSecretRef{Name: cp.Name + c5c3v1alpha1.NovaMetadataSecretSuffix, Key: sharedSecretKey}
	if ref := svc.MetadataSharedSecretRef; ref != nil {
		spec.Metadata.SharedSecretRef = novav1alpha1.SharedSecretRef{Name: ref.Name, Key: keyOr(ref.Key, sharedSecretKey)}
	}
	s := cp.Spec.Services
	spec.Endpoints.Placement.Override = internalOf(s.Placement)
	spec.Endpoints.Neutron.Override = internalOf(s.Neutron)
	spec.Endpoints.Glance.Override = internalOf(s.Glance)
	spec.Endpoints.Cinder = novav1alpha1.OptionalEndpoint{Enabled: s.Cinder != nil, Override: internalOf(s.Cinder)}
	spec.Endpoints.Barbican = novav1alpha1.OptionalEndpoint{Enabled: s.Barbican != nil, Override: internalOf(s.Barbican)}
	if c := svc.ConsoleProxy; c != nil {
		spec.ConsoleProxy = novav1alpha1.ConsoleProxySpec{Enabled: c.Enabled, Hostname: c.Hostname}
	}
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
	port := db.Port
	if port == 0 {
		port = defaultDatabasePort
	}
	return &novav1alpha1.DatabaseSpec{
		Host: db.Host, Port: port, Database: db.Database,
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

func keyOr(key, def string) string {
	if key == "" {
		return def
	}
	return key
}

// childReady tells whether the Nova is Ready for the generation last applied.
func childReady(nova *novav1alpha1.Nova) bool {
	c := apimeta.FindStatusCondition(nova.Status.Conditions, anvilmeta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && nova.Status.ObservedGeneration >= nova.Generation
}

// readKey returns a non-empty Secret value from the ControlPlane's
// namespace, or a *waitError with the given reason naming the field, the
// Secret and the key.
func (r *Reconciler) readKey(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, field string, ref c5c3v1alpha1.SecretKeyRef, defKey, reason string) (string, error) {
	key := keyOr(ref.Key, defKey)
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: cp.Namespace, Name: ref.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &waitError{reason: reason, message: fmt.Sprintf("%s: Secret %s/%s does not exist", field, cp.Namespace, ref.Name)}
		}
		return "", err
	}
	if len(s.Data[key]) == 0 {
		return "", &waitError{reason: reason, message: fmt.Sprintf("%s: Secret %s/%s has no non-empty key %q", field, cp.Namespace, ref.Name, key)}
	}
	return string(s.Data[key]), nil
}

// applyLocalSecret makes a ControlPlane-owned Secret on the management
// cluster hold exactly data. A foreign Secret of that name is refused and
// reported under NovaError.
func (r *Reconciler) applyLocalSecret(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, name string, data map[string][]byte) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cp.Namespace}, Type: corev1.SecretTypeOpaque, Data: data}
	err := targetcluster.LocalChildren(r.Client).ApplySecret(ctx, r.Scheme, cp, s)
	var notOwned *targetcluster.NotOwnedError
	if errors.As(err, &notOwned) {
		return &novaFailure{reason: c5c3v1alpha1.NovaErrorReason, err: flow.Invalid(err)}
	}
	return err
}

// ensureGeneratedMetadataSecret creates {cp}-nova-metadata-secret once. It
// is never rotated by Anvil: deleting it makes a new one.
func (r *Reconciler) ensureGeneratedMetadataSecret(ctx context.Context, cp *c5c3v1alpha1.ControlPlane) error {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cp.Name + c5c3v1alpha1.NovaMetadataSecretSuffix, Namespace: cp.Namespace}}
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(s), &corev1.Secret{})
	if !apierrors.IsNotFound(err) {
		return err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	s.Type = corev1.SecretTypeOpaque
	s.Data = map[string][]byte{sharedSecretKey: []byte(base64.RawURLEncoding.EncodeToString(raw))}
	if err := controllerutil.SetControllerReference(cp, s, r.Scheme); err != nil {
		return err
	}
	return client.IgnoreAlreadyExists(r.Client.Create(ctx, s))
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
	local := targetcluster.LocalChildren(r.Client)
	for _, name := range names {
		if err := local.DeleteSecret(ctx, r.Scheme, cp, cp.Namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// novaFailed reports err on NovaReady and decides how the pass goes on.
func (r *Reconciler) novaFailed(cp *c5c3v1alpha1.ControlPlane, err error) (flow.Outcome, error) {
	var (
		wait    *waitError
		failure *novaFailure
	)
	switch {
	case errors.As(err, &wait):
		setNovaReady(cp, metav1.ConditionFalse, wait.reason, wait.message)
		return flow.WaitAndHalt(waitRequeue), nil
	case errors.As(err, &failure):
		setNovaReady(cp, metav1.ConditionFalse, failure.reason, failure.err.Error())
		return flow.Halt, failure.err
	default:
		setNovaReady(cp, metav1.ConditionFalse, c5c3v1alpha1.NovaErrorReason, err.Error())
		return flow.Halt, err
	}
}
