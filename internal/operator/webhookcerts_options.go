package operator

import (
	"errors"
	"flag"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/anvil/anvil/internal/operator/webhookcerts"
)

// WebhookCertOptions make the operator issue and rotate its webhook
// certificates itself, for clusters without cert-manager. They live apart
// from BindFlags so that the wiring of package webhookcerts stays in one
// place.
type WebhookCertOptions struct {
	// Secret is "namespace/name" of the Secret that keeps the CAs and the
	// serving certificate. Empty leaves --webhook-cert-dir to whatever
	// fills it, e.g. cert-manager.
	Secret string
	// Configuration is the ValidatingWebhookConfiguration whose caBundle
	// the leader keeps current.
	Configuration string
	// Hosts are the DNS names and IPs the serving certificate names.
	Hosts []string
	// Lifetimes of the issued certificates.
	Lifetimes webhookcerts.Lifetimes
}

// bindWebhookCertFlags registers the flags of WebhookCertOptions.
func (o *Options) bindWebhookCertFlags(fs *flag.FlagSet) {
	c := &o.WebhookCerts
	fs.StringVar(&c.Secret, "webhook-cert-secret", "",
		"namespace/name of a Secret in which the operator keeps a self-signed CA and the webhook serving certificate it issues, renews and writes into --webhook-cert-dir; "+
			"empty (the default) serves whatever fills --webhook-cert-dir, e.g. cert-manager.")
	fs.StringVar(&c.Configuration, "webhook-configuration", "",
		"ValidatingWebhookConfiguration whose webhooks' caBundle the leader keeps current; required with --webhook-cert-secret.")
	fs.Func("webhook-cert-hosts",
		"Comma-separated DNS names and IP addresses the serving certificate names, those the apiserver dials (e.g. <service>.<namespace>.svc); required with --webhook-cert-secret.",
		func(v string) error {
			c.Hosts = splitList(v)
			return nil
		})
	fs.DurationVar(&c.Lifetimes.Serving, "webhook-cert-validity", webhookcerts.DefaultLifetimes.Serving,
		"Validity of a serving certificate issued with --webhook-cert-secret; it is renewed after two thirds.")
	fs.DurationVar(&c.Lifetimes.CA, "webhook-ca-validity", webhookcerts.DefaultLifetimes.CA,
		"Validity of a CA made with --webhook-cert-secret; its successor is trusted after two thirds and signs after five sixths.")
}

// webhookCertsConfig turns the options into the package's Config, naming
// the flag of each problem. It returns nil when the operator does not
// issue its certificates.
func (o *Options) webhookCertsConfig() (*webhookcerts.Config, error) {
	c := o.WebhookCerts
	if c.Secret == "" {
		return nil, nil
	}
	var errs []error
	ns, name, ok := strings.Cut(c.Secret, "/")
	if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		errs = append(errs, fmt.Errorf("--webhook-cert-secret %q is not namespace/name", c.Secret))
	}
	if !o.EnableWebhooks {
		errs = append(errs, errors.New("--webhook-cert-secret needs --enable-webhooks"))
	}
	if o.WebhookCertDir == "" {
		errs = append(errs, errors.New("--webhook-cert-secret needs --webhook-cert-dir, where the certificate is written"))
	}
	if c.Configuration == "" {
		errs = append(errs, errors.New("--webhook-cert-secret needs --webhook-configuration"))
	}
	if len(c.Hosts) == 0 {
		errs = append(errs, errors.New("--webhook-cert-secret needs --webhook-cert-hosts"))
	}
	if c.Lifetimes.Serving < 0 || c.Lifetimes.CA < 0 {
		errs = append(errs, errors.New("--webhook-cert-validity and --webhook-ca-validity must not be negative"))
	}
	if l := (webhookcerts.Config{Lifetimes: c.Lifetimes}).EffectiveLifetimes(); l.Serving >= l.CA {
		errs = append(errs, fmt.Errorf("--webhook-cert-validity %s must be shorter than --webhook-ca-validity %s", l.Serving, l.CA))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &webhookcerts.Config{
		Secret:               types.NamespacedName{Namespace: ns, Name: name},
		WebhookConfiguration: c.Configuration,
		Hosts:                c.Hosts,
		CertDir:              o.WebhookCertDir,
		Lifetimes:            c.Lifetimes,
	}, nil
}

// validateWebhookCerts reports the problems of the webhook certificate
// flags.
func (o *Options) validateWebhookCerts() error {
	_, err := o.webhookCertsConfig()
	return err
}
