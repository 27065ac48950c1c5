package clusterreg

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	certutil "k8s.io/client-go/util/cert"

	"github.com/anvil/anvil/internal/kubeconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

// BuildKubeconfig renders the kubeconfig a registration Secret carries: one
// context named name, for the apiserver at server, trusting the PEM bundle
// ca, and authenticating with the bearer token. An empty ca leaves the
// system's trust roots in charge. The result passes the same checks the
// operator applies, so a bad server URL fails here rather than in the
// operator after the Secret is written.
func BuildKubeconfig(name, server string, ca []byte, token string) ([]byte, error) {
	return buildKubeconfig(name, &rest.Config{Host: server, TLSClientConfig: rest.TLSClientConfig{CAData: ca}, BearerToken: token})
}

// buildKubeconfig is BuildKubeconfig for a rest config that may also carry a
// TLS server name. None of its errors quote the token or the kubeconfig.
func buildKubeconfig(name string, cfg *rest.Config) ([]byte, error) {
	if name == "" {
		return nil, errors.New("the kubeconfig needs a name")
	}
	if cfg.BearerToken == "" {
		return nil, errors.New("the token is empty")
	}
	if len(cfg.CAData) > 0 {
		// The parser's error names no bytes; the CA is public anyway, but a
		// clear message beats a TLS failure in the operator later.
		if _, err := certutil.ParseCertsPEM(cfg.CAData); err != nil {
			return nil, fmt.Errorf("the certificate authority is not a PEM certificate bundle: %w", err)
		}
	}
	raw, err := kubeconfig.Embedded(name, &rest.Config{
		Host:            cfg.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CAData, ServerName: cfg.ServerName},
		BearerToken:     cfg.BearerToken,
	})
	if err != nil {
		// Serialisation errors could in principle echo a field; say only
		// that it failed.
		return nil, errors.New("rendering the kubeconfig failed")
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		return nil, errors.New("the rendered kubeconfig does not load")
	}
	if err := targetcluster.CheckKubeconfig(kc); err != nil {
		return nil, fmt.Errorf("the kubeconfig for %s would be refused by the operator: %w", name, err)
	}
	return raw, nil
}
