package clusterreg

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/anvil/anvil/internal/targetcluster"
)

// Defaults of the Options fields; they match the target-cluster-access
// chart's defaults and the namespace the operator watches.
const (
	DefaultClustersNamespace = "c5c3-clusters"
	DefaultAccessNamespace   = "c5c3-access"
	DefaultServiceAccount    = "target-cluster-access"
	DefaultTimeout           = time.Minute
	// DefaultTokenExpiration is a month: short enough that a leaked
	// registration dies on its own, long enough for a monthly refresh
	// with room to spare if one run fails.
	DefaultTokenExpiration = 30 * 24 * time.Hour
)

// Options says which cluster to register and where things are.
type Options struct {
	// ClusterName names the registration Secret, and so the cluster in
	// targetClusterRef. It must be a DNS-1123 subdomain.
	ClusterName string
	// Namespaces is the comma-separated list of namespaces the operator may
	// use on the compute cluster. Empty registers the cluster cluster-wide.
	Namespaces string
	// ClustersNamespace is the namespace of the registration Secrets on the
	// management cluster.
	ClustersNamespace string
	// AccessNamespace is the namespace on the compute cluster that the
	// chart was installed into.
	AccessNamespace string
	// ServiceAccount is the chart's ServiceAccount, whose bound token the
	// registration carries.
	ServiceAccount string
	// Timeout bounds the wait for the ServiceAccount to exist.
	Timeout time.Duration
	// TokenExpiration is how long the registration's token works.
	TokenExpiration time.Duration
	// Refresh renews the token of an existing registration only.
	Refresh bool
	// AllowUnlabelledNamespaces registers even when a namespace of the
	// registration lacks the Pod Security labels the access chart sets,
	// printing a warning for each instead of refusing.
	AllowUnlabelledNamespaces bool
}

// WithDefaults returns a copy of o in which every empty field except
// ClusterName and Namespaces holds its default.
func (o Options) WithDefaults() Options {
	if o.ClustersNamespace == "" {
		o.ClustersNamespace = DefaultClustersNamespace
	}
	if o.AccessNamespace == "" {
		o.AccessNamespace = DefaultAccessNamespace
	}
	if o.ServiceAccount == "" {
		o.ServiceAccount = DefaultServiceAccount
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.TokenExpiration == 0 {
		o.TokenExpiration = DefaultTokenExpiration
	}
	return o
}

// Validate checks every field as given; call WithDefaults first to fill the
// optional ones. It returns all problems at once, each naming its flag.
func (o Options) Validate() error {
	var errs []error
	if o.ClusterName == "" {
		errs = append(errs, errors.New("--name is required: the name of the cluster, as targetClusterRef will use it"))
	} else if msgs := validation.IsDNS1123Subdomain(o.ClusterName); len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--name %q is not a DNS-1123 subdomain: %s", o.ClusterName, strings.Join(msgs, "; ")))
	}
	if _, err := o.NormalizedNamespaces(); err != nil {
		errs = append(errs, err)
	}
	for _, f := range []struct{ flag, value string }{
		{"--clusters-namespace", o.ClustersNamespace},
		{"--access-namespace", o.AccessNamespace},
	} {
		if msgs := validation.IsDNS1123Label(f.value); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("%s %q is not a namespace name: %s", f.flag, f.value, strings.Join(msgs, "; ")))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(o.ServiceAccount); o.ServiceAccount == "" || len(msgs) > 0 {
		errs = append(errs, fmt.Errorf("--service-account %q is not a ServiceAccount name", o.ServiceAccount))
	}
	if o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("--timeout %s must be positive", o.Timeout))
	}
	if o.TokenExpiration < MinTokenExpiration || o.TokenExpiration > MaxTokenExpiration {
		errs = append(errs, fmt.Errorf("--token-expiration %s must be between %s and %s", o.TokenExpiration, MinTokenExpiration, MaxTokenExpiration))
	}
	return errors.Join(errs...)
}

// NormalizedNamespaces returns the namespaces as the registration Secret
// stores them: trimmed, deduplicated, sorted and comma-joined. An empty or
// blank Namespaces gives "", meaning cluster-wide.
func (o Options) NormalizedNamespaces() (string, error) {
	if strings.TrimSpace(o.Namespaces) == "" {
		return "", nil
	}
	list, err := targetcluster.ParseNamespaces(o.Namespaces)
	if err != nil {
		return "", fmt.Errorf("--namespaces %q: each comma-separated entry must be a DNS-1123 label: %w", o.Namespaces, err)
	}
	return strings.Join(list, ","), nil
}
