package operator

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// servingCertExpiry tells when the certificate each of the operator's TLS
// servers serves expires. It reads the file the server reloads, so it is
// true whoever writes it: cert-manager, or the operator itself with
// --webhook-cert-secret. The label is a fixed word per server.
var servingCertExpiry = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "anvil_serving_certificate_expiry_timestamp_seconds",
	Help: "Unix time at which the certificate in the certificate directory of a TLS server of the operator (server=webhook or metrics) expires; no series while the file cannot be read.",
}, []string{"server"})

func init() {
	metrics.Registry.MustRegister(servingCertExpiry)
}

// Servers of servingCertExpiry.
const (
	webhookServer = "webhook"
	metricsServer = "metrics"
)

// certExpiryInterval is how often the files are read again. Renewal
// happens days before expiry, so a minute is plenty.
const certExpiryInterval = time.Minute

// certExpiryWatcher sets servingCertExpiry from the certificate files. Every
// replica runs it, since every replica serves.
type certExpiryWatcher struct {
	// files maps a server label to its certificate file.
	files    map[string]string
	interval time.Duration
}

// newCertExpiryWatcher watches the servers whose certificate directory is
// set; a server without one serves a certificate generated in memory,
// which has no file to read.
func newCertExpiryWatcher(o *Options) *certExpiryWatcher {
	files := map[string]string{}
	if o.WebhookCertDir != "" {
		files[webhookServer] = filepath.Join(o.WebhookCertDir, "tls.crt")
	}
	if o.MetricsSecure && o.MetricsCertDir != "" {
		files[metricsServer] = filepath.Join(o.MetricsCertDir, "tls.crt")
	}
	return &certExpiryWatcher{files: files, interval: certExpiryInterval}
}

// Start reads the files at once and then every interval until ctx ends.
// It implements manager.Runnable.
func (w *certExpiryWatcher) Start(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		w.observe()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection is false: a follower serves webhooks and metrics too.
func (w *certExpiryWatcher) NeedLeaderElection() bool { return false }

// observe sets each server's series, or drops it while its file cannot be
// read: a stale expiry would hide a renewal that broke the file.
func (w *certExpiryWatcher) observe() {
	for server, path := range w.files {
		notAfter, err := leafNotAfter(path)
		if err != nil {
			servingCertExpiry.DeleteLabelValues(server)
			continue
		}
		servingCertExpiry.WithLabelValues(server).Set(float64(notAfter.Unix()))
	}
}

// leafNotAfter returns the expiry of the first certificate in a PEM file,
// the one a TLS server presents.
func leafNotAfter(path string) (time.Time, error) {
	raw, err := os.ReadFile(path) // #nosec G304 -- the operator's own certificate directory, from its flags
	if err != nil {
		return time.Time{}, err
	}
	for block, rest := pem.Decode(raw); block != nil; block, rest = pem.Decode(rest) {
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s: %w", path, err)
		}
		return cert.NotAfter, nil
	}
	return time.Time{}, errors.New(path + ": no certificate")
}
