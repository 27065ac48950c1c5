package operator

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/anvil/anvil/internal/dev/metricstest"
)

// certPEM returns a self-signed certificate expiring at notAfter, in PEM.
func certPEM(t *testing.T, notAfter time.Time) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test"},
		NotBefore: notAfter.Add(-time.Hour), NotAfter: notAfter}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestLeafNotAfter(t *testing.T) {
	notAfter := time.Date(2027, 3, 1, 12, 0, 0, 0, time.UTC)
	leaf := certPEM(t, notAfter)
	keyBlock := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte("x")})
	for _, tc := range []struct {
		name    string
		content []byte
		want    time.Time
		wantErr bool
	}{
		{name: "one certificate", content: leaf, want: notAfter},
		// A chain's first certificate is the one the server presents.
		{name: "chain", content: append(append([]byte{}, leaf...), certPEM(t, notAfter.Add(time.Hour))...), want: notAfter},
		{name: "key before the certificate", content: append(append([]byte{}, keyBlock...), leaf...), want: notAfter},
		{name: "no certificate", content: keyBlock, wantErr: true},
		{name: "garbage", content: []byte("not PEM"), wantErr: true},
		{name: "broken certificate", content: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte("x")}), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "tls.crt")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := leafNotAfter(path)
			if (err != nil) != tc.wantErr || !got.Equal(tc.want) {
				t.Errorf("leafNotAfter = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// expirySeries reads the gauge's series by server.
func expirySeries(t *testing.T) map[string]float64 {
	t.Helper()
	return metricstest.GaugesByLabel(t, servingCertExpiry)
}

// The gauge follows the files: a renewed certificate moves its series, a
// file that cannot be read drops it, and a server without a certificate
// directory has none.
func TestCertExpiryWatcherFollowsTheFiles(t *testing.T) {
	t.Cleanup(servingCertExpiry.Reset)
	dir := t.TempDir()
	w := newCertExpiryWatcher(&Options{WebhookCertDir: dir, MetricsSecure: true})
	if _, ok := w.files[metricsServer]; ok {
		t.Fatalf("watching the metrics server without a certificate directory: %v", w.files)
	}
	first := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(content []byte) {
		if err := os.WriteFile(filepath.Join(dir, "tls.crt"), content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(certPEM(t, first))
	w.observe()
	if got := expirySeries(t); len(got) != 1 || got[webhookServer] != float64(first.Unix()) {
		t.Fatalf("series %v, want webhook at %d", got, first.Unix())
	}
	renewed := first.AddDate(0, 3, 0)
	write(certPEM(t, renewed))
	w.observe()
	if got := expirySeries(t); got[webhookServer] != float64(renewed.Unix()) {
		t.Errorf("series %v after renewal, want webhook at %d", got, renewed.Unix())
	}
	write([]byte("truncated"))
	w.observe()
	if got := expirySeries(t); len(got) != 0 {
		t.Errorf("series %v with an unreadable file, want none", got)
	}
}
