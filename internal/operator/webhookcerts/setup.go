// Package webhookcerts issues and rotates the webhook server's certificates
// when cert-manager is absent: a self-signed CA and a serving certificate,
// kept in one Secret, served by every replica and trusted through the
// webhook configuration's caBundle. docs/design/webhook-certificates.md
// explains the lifetimes and the CA overlap.
package webhookcerts

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// Certs wires the certificate directory writer, which every replica runs,
// and the Rotator, which only the leader runs, into a manager.
type Certs struct {
	cfg    Config
	writer *fileWriter
}

// New checks cfg and returns the wiring; call WrapServer before the
// manager is built and SetupWithManager after.
func New(cfg Config) (*Certs, error) {
	switch {
	case cfg.Secret.Namespace == "" || cfg.Secret.Name == "":
		return nil, errors.New("the certificate Secret needs a namespace and a name")
	case cfg.WebhookConfiguration == "":
		return nil, errors.New("no ValidatingWebhookConfiguration to keep the caBundle of")
	case len(cfg.Hosts) == 0:
		return nil, errors.New("no host names for the serving certificate")
	case cfg.CertDir == "":
		return nil, errors.New("no certificate directory")
	case cfg.EffectiveLifetimes().Serving >= cfg.EffectiveLifetimes().CA:
		return nil, errors.New("the serving certificate must be valid for less time than the CA")
	}
	log := ctrl.Log.WithName("webhook-certs")
	return &Certs{cfg: cfg, writer: newFileWriter(cfg.CertDir, cfg.Secret, log)}, nil
}

// WrapServer returns a webhook server that starts only once the
// certificate directory holds a certificate.
func (c *Certs) WrapServer(s webhook.Server) webhook.Server {
	return &waitingServer{Server: s, ready: c.writer.ready, log: c.writer.log}
}

// SetupWithManager adds a cache of the one Secret and the one webhook
// configuration, the writer and the Rotator to mgr. The cache selects both
// by name, so the operator holds no other Secret of the namespace and needs
// RBAC on these two objects only.
func (c *Certs) SetupWithManager(mgr ctrl.Manager) error {
	objCache, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(),
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{c.cfg.Secret.Namespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", c.cfg.Secret.Name),
			},
			&admissionregistrationv1.ValidatingWebhookConfiguration{}: {
				Field: fields.OneTermEqualSelector("metadata.name", c.cfg.WebhookConfiguration),
			},
		},
		// Anything else read through this cache is a bug, not a new watch.
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return fmt.Errorf("creating the webhook certificates cache: %w", err)
	}
	rotator := NewRotator(c.cfg, objCache, mgr.GetClient(), c.writer.log)
	rotator.serves = c.writer.serves
	poke := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { rotator.Poke() },
		UpdateFunc: func(any, any) { rotator.Poke() },
		DeleteFunc: func(any) { rotator.Poke() },
	}
	write := toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.writer.onSecret,
		UpdateFunc: func(_, obj any) { c.writer.onSecret(obj) },
	}
	ctx := context.Background()
	secrets, err := objCache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return err
	}
	configs, err := objCache.GetInformer(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{})
	if err != nil {
		return err
	}
	for _, h := range []struct {
		inf     cache.Informer
		handler toolscache.ResourceEventHandler
	}{{secrets, write}, {secrets, poke}, {configs, poke}} {
		if _, err := h.inf.AddEventHandler(h.handler); err != nil {
			return fmt.Errorf("watching the webhook certificates: %w", err)
		}
	}
	// As a cache of its own it would start with the other runnables,
	// unsynced; as a hasCache it starts, and syncs, before them.
	if err := mgr.Add(syncedCache{objCache}); err != nil {
		return err
	}
	return mgr.Add(rotator)
}

// syncedCache makes the manager start a cache in its caches group, which
// syncs before the Rotator reads it.
type syncedCache struct{ cache.Cache }

// GetCache returns the cache.
func (s syncedCache) GetCache() cache.Cache { return s.Cache }
