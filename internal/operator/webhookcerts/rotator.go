package webhookcerts

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Retry bounds: a failed pass is retried after minWait, doubling up to
// maxBackoff. maxWait bounds a settled wait, so a suspended node or a jump
// of the clock delays a renewal by at most that much; a pass that finds
// nothing due reads only the cache.
const (
	minWait    = time.Second
	maxBackoff = time.Minute
	maxWait    = time.Hour
)

// Config says which certificates the operator keeps and where.
type Config struct {
	// Secret holds the CAs and the serving certificate.
	Secret types.NamespacedName
	// WebhookConfiguration is the ValidatingWebhookConfiguration whose
	// webhooks' caBundle the leader keeps current.
	WebhookConfiguration string
	// Hosts are the DNS names and IP addresses the serving certificate
	// names: those the apiserver dials.
	Hosts []string
	// CertDir receives tls.crt and tls.key on every replica.
	CertDir string
	// Lifetimes of the certificates; zero fields take DefaultLifetimes.
	Lifetimes Lifetimes
}

// EffectiveLifetimes returns the configured lifetimes with defaults filled
// in.
func (c Config) EffectiveLifetimes() Lifetimes {
	l := c.Lifetimes
	if l.CA <= 0 {
		l.CA = DefaultLifetimes.CA
	}
	if l.Serving <= 0 {
		l.Serving = DefaultLifetimes.Serving
	}
	return l
}

// commonName names the CAs after the Secret, so that a certificate found
// in a bundle says where it came from.
func (c Config) commonName() string {
	return fmt.Sprintf("anvil-webhook-ca %s/%s", c.Secret.Namespace, c.Secret.Name)
}

// Rotator keeps the Secret and the webhook configuration's caBundle
// current. Only the leader runs it: two writers would issue two CAs.
type Rotator struct {
	cfg    Config
	reader client.Reader
	writer client.Client
	log    logr.Logger
	poke   chan struct{}
	// serves tells whether this replica's webhook server serves a
	// certificate; a replaced CA leaves the bundle only then. Nil, as in
	// a process that serves no webhook, leaves the decision to the time.
	serves func(*x509.Certificate) bool
}

// NewRotator returns a Rotator that reads through reader, normally a cache
// of the one Secret and the one webhook configuration, and writes through
// writer.
func NewRotator(cfg Config, reader client.Reader, writer client.Client, log logr.Logger) *Rotator {
	return &Rotator{cfg: cfg, reader: reader, writer: writer, log: log, poke: make(chan struct{}, 1)}
}

// NeedLeaderElection makes only the leader issue certificates and patch
// the webhook configuration.
func (r *Rotator) NeedLeaderElection() bool { return true }

// Poke asks for a pass soon, after the Secret or the webhook configuration
// changed. It never blocks.
func (r *Rotator) Poke() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// Start runs passes until ctx ends: when something is due, when the Secret
// or the webhook configuration changes, and after a failure.
func (r *Rotator) Start(ctx context.Context) error {
	backoff := minWait
	for {
		res, err := r.Pass(ctx, time.Now())
		wait := min(max(time.Until(res.NextDue), minWait), maxWait)
		switch {
		case apierrors.IsConflict(err):
			// The cache had not seen the last write yet; its event pokes.
			r.log.V(1).Info("webhook certificates: retrying after a conflict")
			wait = minWait
		case err != nil:
			r.log.Error(err, "webhook certificates: pass failed, retrying", "after", backoff)
			wait, backoff = backoff, min(2*backoff, maxBackoff)
		default:
			backoff = minWait
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.poke:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// Result is what a pass did.
type Result struct {
	// NextDue is when the next pass may have something to do.
	NextDue time.Time
	// SecretWritten and WebhooksPatched say what the pass wrote.
	SecretWritten, WebhooksPatched bool
}

// Pass brings the Secret and every webhook's caBundle to what now
// requires. When nothing is due and both are current it writes nothing.
func (r *Rotator) Pass(ctx context.Context, now time.Time) (Result, error) {
	secret := &corev1.Secret{}
	err := r.reader.Get(ctx, r.cfg.Secret, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return Result{}, fmt.Errorf("reading Secret %s: %w", r.cfg.Secret, err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	vwcErr := r.reader.Get(ctx, client.ObjectKey{Name: r.cfg.WebhookConfiguration}, vwc)
	if vwcErr != nil {
		vwc = nil
	}
	var data map[string][]byte
	if secret != nil {
		data = secret.Data
	}
	old := stateFromData(data)
	served := old.Serving != nil && (r.serves == nil || r.serves(old.Serving.Cert))
	state, changes, err := Advance(now, old, r.cfg.Hosts, r.cfg.EffectiveLifetimes(), r.cfg.commonName(),
		vwc != nil && old.NextCA != nil && trustsEverywhere(vwc, old.NextCA), served)
	if err != nil {
		return Result{}, err
	}
	res := Result{NextDue: state.NextDue()}
	if !sameData(state.data(), data) {
		if err := r.writeSecret(ctx, secret, state.data()); err != nil {
			return res, err
		}
		res.SecretWritten = true
		r.log.Info("webhook certificates changed", "secret", r.cfg.Secret.String(), "changes", changes,
			"servingSerial", state.Serving.Cert.SerialNumber.Text(16), "servingNotAfter", state.Serving.Cert.NotAfter,
			"caNotAfter", state.CA.Cert.NotAfter)
	}
	if vwcErr != nil {
		// The Secret is kept even without the configuration, so that the
		// server can start; the CA waits to be trusted before it signs.
		return res, fmt.Errorf("reading ValidatingWebhookConfiguration %s: %w", r.cfg.WebhookConfiguration, vwcErr)
	}
	patched, err := r.patchCABundle(ctx, vwc, state.Bundle)
	res.WebhooksPatched = patched
	return res, err
}

// trustsEverywhere reports whether every webhook of vwc trusts kp's
// certificate.
func trustsEverywhere(vwc *admissionregistrationv1.ValidatingWebhookConfiguration, kp *KeyPair) bool {
	for _, w := range vwc.Webhooks {
		if !BundleHolds(w.ClientConfig.CABundle, kp.Cert) {
			return false
		}
	}
	return true
}

// writeSecret stores data, creating the Secret when it does not exist.
// An update carries the resourceVersion read, so a write based on a stale
// read fails with a conflict instead of undoing a newer one.
func (r *Rotator) writeSecret(ctx context.Context, live *corev1.Secret, data map[string][]byte) error {
	if live == nil {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: r.cfg.Secret.Namespace, Name: r.cfg.Secret.Name},
			Type:       corev1.SecretTypeOpaque,
			Data:       data,
		}
		if err := r.writer.Create(ctx, s); err != nil {
			return fmt.Errorf("creating Secret %s: %w", r.cfg.Secret, err)
		}
		return nil
	}
	s := live.DeepCopy()
	s.Data = data
	if err := r.writer.Update(ctx, s); err != nil {
		return fmt.Errorf("updating Secret %s: %w", r.cfg.Secret, err)
	}
	return nil
}

// patchCABundle sets bundle as every webhook's caBundle and reports
// whether it had to. The patch is optimistically locked: it replaces the
// whole webhook list, which must not undo a concurrent change.
func (r *Rotator) patchCABundle(ctx context.Context, vwc *admissionregistrationv1.ValidatingWebhookConfiguration, bundle []byte) (bool, error) {
	patched := vwc.DeepCopy()
	changed := false
	for i := range patched.Webhooks {
		if !bytes.Equal(patched.Webhooks[i].ClientConfig.CABundle, bundle) {
			patched.Webhooks[i].ClientConfig.CABundle = bundle
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	if err := r.writer.Patch(ctx, patched, client.MergeFromWithOptions(vwc, client.MergeFromWithOptimisticLock{})); err != nil {
		return false, fmt.Errorf("patching the caBundle of ValidatingWebhookConfiguration %s: %w", vwc.Name, err)
	}
	r.log.Info("webhook configuration now trusts the current CAs", "validatingWebhookConfiguration", vwc.Name,
		"webhooks", len(patched.Webhooks), "cas", len(ParseCertificates(bundle)))
	return true, nil
}
