package webhookcerts

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
)

// The layout of the certificate directory, the one the kubelet gives a
// Secret volume: tls.crt and tls.key are links into ..data, itself a link
// to a directory of one generation. A new generation is swapped in with
// one rename, so a reader never sees a new certificate with an old key.
// controller-runtime's certwatcher follows the links and reloads when the
// old generation is removed.
const (
	dataLink       = "..data"
	generationGlob = "..certs-*"
)

// fileWriter writes the serving certificate of the Secret into the
// certificate directory. Every replica runs one, so every replica serves
// what the leader issued.
type fileWriter struct {
	dir    string
	secret types.NamespacedName
	log    logr.Logger

	mu        sync.Mutex
	ready     chan struct{}
	readyOnce sync.Once
}

func newFileWriter(dir string, secret types.NamespacedName, log logr.Logger) *fileWriter {
	return &fileWriter{dir: dir, secret: secret, log: log, ready: make(chan struct{})}
}

// onSecret writes the Secret's serving pair unless the directory holds it
// already or the pair is missing or broken, which the leader repairs.
func (w *fileWriter) onSecret(obj any) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s.Namespace != w.secret.Namespace || s.Name != w.secret.Name {
		return
	}
	pair := parseKeyPair(s.Data[KeyServingCert], s.Data[KeyServingKey])
	if pair == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.holds(pair) {
		w.markReady()
		return
	}
	if err := writeGeneration(w.dir, map[string][]byte{KeyServingCert: pair.CertPEM, KeyServingKey: pair.KeyPEM}); err != nil {
		w.log.Error(err, "writing the webhook serving certificate", "dir", w.dir)
		return
	}
	w.log.Info("serving a new webhook certificate", "serial", pair.Cert.SerialNumber.Text(16), "notAfter", pair.Cert.NotAfter)
	w.markReady()
}

// holds reports whether the directory already has exactly pair.
func (w *fileWriter) holds(pair *KeyPair) bool {
	crt, err1 := os.ReadFile(filepath.Join(w.dir, KeyServingCert))
	key, err2 := os.ReadFile(filepath.Join(w.dir, KeyServingKey))
	return err1 == nil && err2 == nil && bytes.Equal(crt, pair.CertPEM) && bytes.Equal(key, pair.KeyPEM)
}

// serves reports whether the directory, which the webhook server loads,
// holds c as its serving certificate.
func (w *fileWriter) serves(c *x509.Certificate) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	crt, err := os.ReadFile(filepath.Join(w.dir, KeyServingCert))
	if err != nil {
		return false
	}
	certs := ParseCertificates(crt)
	return len(certs) > 0 && certs[0].Equal(c)
}

func (w *fileWriter) markReady() { w.readyOnce.Do(func() { close(w.ready) }) }

// writeGeneration writes files as a new generation of dir and swaps it in,
// then removes the older generations.
func writeGeneration(dir string, files map[string][]byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	gen, err := os.MkdirTemp(dir, strings.TrimSuffix(generationGlob, "*"))
	if err != nil {
		return err
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(gen, name), content, 0o600); err != nil {
			return errors.Join(err, os.RemoveAll(gen))
		}
	}
	tmpLink := filepath.Join(dir, dataLink+"_tmp")
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(gen), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataLink)); err != nil {
		return err
	}
	for name := range files {
		p, target := filepath.Join(dir, name), filepath.Join(dataLink, name)
		if cur, err := os.Readlink(p); err == nil && cur == target {
			continue
		}
		// The first write, or a directory written some other way.
		_ = os.Remove(p)
		if err := os.Symlink(target, p); err != nil {
			return err
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, generationGlob))
	if err != nil {
		return err
	}
	var errs []error
	for _, o := range old {
		if o != gen {
			errs = append(errs, os.RemoveAll(o))
		}
	}
	return errors.Join(errs...)
}

// waitingServer holds back the webhook server until the certificate
// directory has a certificate: started without one, controller-runtime's
// server fails and stops the manager. Until then nothing is admitted,
// which a failurePolicy of Fail makes safe.
type waitingServer struct {
	webhook.Server
	ready <-chan struct{}
	log   logr.Logger
}

// Start waits for the first certificate, then serves.
func (s *waitingServer) Start(ctx context.Context) error {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil
	default:
		s.log.Info("the webhook server waits for its first certificate")
		select {
		case <-s.ready:
		case <-ctx.Done():
			return nil
		}
	}
	if err := s.Server.Start(ctx); err != nil {
		return fmt.Errorf("webhook server: %w", err)
	}
	return nil
}
