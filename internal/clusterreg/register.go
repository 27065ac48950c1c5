package clusterreg

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/targetcluster"
)

// Action says what Register did to the registration Secret.
type Action string

// What Register can do to the registration Secret.
const (
	ActionCreated   Action = "created"
	ActionUpdated   Action = "updated"
	ActionUnchanged Action = "unchanged"
)

// ErrNotRegistration is wrapped by the error Register returns when a Secret
// of the cluster's name exists but lacks the registration label. Such a
// Secret belongs to someone else and is never overwritten.
var ErrNotRegistration = errors.New("it is not a registration Secret")

// Result describes a registration that Register wrote.
type Result struct {
	// Secret is the registration Secret as the management cluster stores
	// it. It holds the credential; do not print it.
	Secret *corev1.Secret
	// Action says whether the Secret was created, updated or already
	// current.
	Action Action
	// Server is the compute cluster's apiserver URL in the kubeconfig.
	Server string
	// Namespaces is the normalised namespaces value; empty means
	// cluster-wide.
	Namespaces string
}

// pollInterval is how often Register looks at the token Secret while it
// waits; a variable so tests can shorten it.
var pollInterval = 500 * time.Millisecond

// requestTimeout bounds each request to the compute cluster when the
// context's configuration sets no timeout of its own.
const requestTimeout = 30 * time.Second

// caGrace is how long Register keeps waiting for "ca.crt" once "token" is
// there. The token controller writes both in one update, so a Secret with a
// token and no CA normally stays that way, and the context's CA is used.
var caGrace = 2 * time.Second

// Register writes the registration Secret of a compute cluster onto the
// management cluster. compute reaches the compute cluster with the
// registrant's own credentials; it is used to read the token Secret of the
// chart's ServiceAccount, and its Host, as a full URL, becomes the
// kubeconfig's server. mgmt writes to the management cluster. Empty optional
// fields of opts take their defaults. Register prints one line to out saying
// what it did (out may be nil); neither that line nor any error it returns
// contains Secret data.
func Register(ctx context.Context, compute *rest.Config, mgmt client.Client, opts Options, out io.Writer) (*Result, error) {
	opts = opts.WithDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if out == nil {
		out = io.Discard
	}
	namespaces, err := opts.NormalizedNamespaces()
	if err != nil {
		return nil, err
	}

	// Bound each request, so that an apiserver that accepts the connection
	// and never answers cannot stall the command past its timeout for long.
	computeCfg := rest.CopyConfig(compute)
	if computeCfg.Timeout == 0 {
		computeCfg.Timeout = requestTimeout
	}
	server, err := serverURL(computeCfg)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(computeCfg)
	if err != nil {
		return nil, fmt.Errorf("building a client for the compute cluster: %w", err)
	}
	tokenSecret, err := waitForToken(ctx, cs.CoreV1(), opts)
	if err != nil {
		return nil, err
	}

	ca := tokenSecret.Data[corev1.ServiceAccountRootCAKey]
	if len(ca) == 0 {
		if ca, err = contextCA(compute); err != nil {
			return nil, err
		}
	}
	token := string(tokenSecret.Data[corev1.ServiceAccountTokenKey])
	raw, err := buildKubeconfig(opts.ClusterName, &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: compute.ServerName},
		BearerToken:     token,
	})
	if err != nil {
		return nil, err
	}

	want := targetcluster.BuildRegistrationSecret(opts.ClusterName, opts.ClustersNamespace, raw, namespaces)
	action, stored, err := writeRegistration(ctx, mgmt, want)
	if err != nil {
		// The apiserver, or a webhook in front of it, may echo the object
		// back in an error; scrub the credential from whatever it says.
		return nil, newRedactor(token, raw).redact(err)
	}

	scope := "cluster-wide"
	if namespaces != "" {
		scope = "namespaces " + namespaces
	}
	fmt.Fprintf(out, "registration Secret %s/%s %s (server %s, %s)\n", want.Namespace, want.Name, action, server, scope)
	return &Result{Secret: stored, Action: action, Server: server, Namespaces: namespaces}, nil
}

// serverURL spells out the compute context's server as a full URL. client-go
// accepts a bare host:port and picks the scheme itself, but the operator
// requires a URL, so the registration gets what the context really reaches.
func serverURL(cfg *rest.Config) (string, error) {
	if cfg.Host == "" {
		return "", errors.New("the compute context names no server")
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		// client-go's message quotes the host, which could carry a password.
		return "", errors.New("the compute context's server is neither a URL nor a host:port pair")
	}
	return u.String(), nil
}

// waitForToken reads the ServiceAccount's token Secret until the token
// controller has filled it in. A missing Secret is waited for too, since the
// chart may have been installed a moment ago.
func waitForToken(ctx context.Context, secrets corev1client.SecretsGetter, opts Options) (*corev1.Secret, error) {
	ns, name := opts.AccessNamespace, opts.TokenSecretName()
	var last *corev1.Secret
	var tokenSeen time.Time
	// The reads use the caller's context, not the poll's: client-go's rate
	// limiter fails a request early when its context's deadline is near,
	// which would turn the plain timeout into a confusing error.
	err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(context.Context) (bool, error) {
		s, err := secrets.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			last = nil
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading Secret %s/%s on the compute cluster: %w", ns, name, err)
		}
		if owner, ok := s.Annotations[corev1.ServiceAccountNameKey]; ok && owner != opts.ServiceAccount {
			return false, fmt.Errorf("secret %s/%s on the compute cluster holds the token of ServiceAccount %q, not %q", ns, name, owner, opts.ServiceAccount)
		}
		last = s
		if len(s.Data[corev1.ServiceAccountTokenKey]) == 0 {
			return false, nil
		}
		if len(s.Data[corev1.ServiceAccountRootCAKey]) > 0 {
			return true, nil
		}
		if tokenSeen.IsZero() {
			tokenSeen = time.Now()
		}
		return time.Since(tokenSeen) >= caGrace, nil
	})
	switch {
	case err == nil:
		return last, nil
	case !wait.Interrupted(err):
		return nil, err
	case ctx.Err() != nil:
		return nil, fmt.Errorf("waiting for Secret %s/%s on the compute cluster: %w", ns, name, ctx.Err())
	case last == nil:
		return nil, fmt.Errorf("secret %s/%s does not exist on the compute cluster after %s; install the target-cluster-access chart there first, or pass the --access-namespace and --service-account it was installed with", ns, name, opts.Timeout)
	case len(last.Data[corev1.ServiceAccountTokenKey]) == 0:
		return nil, fmt.Errorf("secret %s/%s on the compute cluster still has no %q key after %s; is its type %s and is kube-controller-manager's token controller running?", ns, name, corev1.ServiceAccountTokenKey, opts.Timeout, corev1.SecretTypeServiceAccountToken)
	default:
		// The token came, the CA did not within the timeout: use the
		// context's CA, as for a Secret without one.
		return last, nil
	}
}

// contextCA returns the CA the registrant's own context trusts, for a token
// Secret without "ca.crt". nil means the system's trust roots.
func contextCA(cfg *rest.Config) ([]byte, error) {
	if len(cfg.CAData) > 0 {
		return cfg.CAData, nil
	}
	if cfg.CAFile == "" {
		return nil, nil
	}
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the compute context's certificate authority: %w", err)
	}
	return ca, nil
}

// writeRegistration creates the registration Secret, or updates it when a
// labelled one exists, after making sure its namespace exists.
func writeRegistration(ctx context.Context, c client.Client, want *corev1.Secret) (Action, *corev1.Secret, error) {
	if err := ensureNamespace(ctx, c, want.Namespace); err != nil {
		return "", nil, err
	}
	ref := want.Namespace + "/" + want.Name
	var action Action
	var stored *corev1.Secret
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &corev1.Secret{}
		err := c.Get(ctx, client.ObjectKeyFromObject(want), got)
		if apierrors.IsNotFound(err) {
			obj := want.DeepCopy()
			if err := c.Create(ctx, obj); err != nil {
				return fmt.Errorf("creating registration Secret %s on the management cluster: %w", ref, err)
			}
			action, stored = ActionCreated, obj
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading Secret %s on the management cluster: %w", ref, err)
		}
		if got.Labels[targetcluster.RegistrationLabel] != "true" {
			return fmt.Errorf("secret %s exists on the management cluster without the label %s=true; refusing to overwrite it: %w",
				ref, targetcluster.RegistrationLabel, ErrNotRegistration)
		}
		if maps.EqualFunc(got.Data, want.Data, bytes.Equal) {
			action, stored = ActionUnchanged, got
			return nil
		}
		// Replace the data wholesale, so that a key the new registration
		// leaves out (a now cluster-wide scope) goes away.
		got.Data = want.Data
		for k, v := range want.Labels {
			got.Labels[k] = v
		}
		if err := c.Update(ctx, got); err != nil {
			return fmt.Errorf("updating registration Secret %s on the management cluster: %w", ref, err)
		}
		action, stored = ActionUpdated, got
		return nil
	})
	return action, stored, err
}

// ensureNamespace creates the clusters namespace when it is missing. A
// registrant may be allowed to write Secrets there without being allowed to
// read Namespaces, so a refused read is not an error: the Secret write will
// tell.
func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("reading namespace %s on the management cluster: %w", name, err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		return fmt.Errorf("creating namespace %s on the management cluster: %w", name, err)
	}
	return nil
}

// redactor scrubs credentials from error messages that were not written by
// this package.
type redactor []string

// newRedactor covers the token and the kubeconfig, raw and base64-encoded as
// they appear in a serialised Secret. The kubeconfig goes first because it
// contains the token.
func newRedactor(token string, kubeconfig []byte) redactor {
	var r redactor
	for _, s := range []string{
		string(kubeconfig),
		base64.StdEncoding.EncodeToString(kubeconfig),
		token,
		base64.StdEncoding.EncodeToString([]byte(token)),
	} {
		if s != "" {
			r = append(r, s)
		}
	}
	return r
}

// redact returns err unchanged when its message holds no credential, and
// otherwise an error with the credential replaced that still unwraps to err,
// so that apierrors.IsConflict and friends keep working.
func (r redactor) redact(err error) error {
	msg := err.Error()
	clean := msg
	for _, s := range r {
		clean = strings.ReplaceAll(clean, s, "[redacted]")
	}
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

// redactedError carries a scrubbed message in place of its cause's.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
