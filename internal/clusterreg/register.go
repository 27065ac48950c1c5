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
	"k8s.io/client-go/kubernetes"
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
	// Expires is when the registration's token stops working.
	Expires time.Time
}

// pollInterval is how often Register asks again for a token while the
// ServiceAccount does not exist yet; a variable so tests can shorten it.
var pollInterval = 500 * time.Millisecond

// requestTimeout bounds each request to the compute cluster when the
// context's configuration sets no timeout of its own.
const requestTimeout = 30 * time.Second

// Register writes the registration Secret of a compute cluster onto the
// management cluster. compute reaches the compute cluster with the
// registrant's own credentials; it is used to request a bound token of the
// chart's ServiceAccount, which expires after opts.TokenExpiration, and its
// Host, as a full URL, becomes the kubeconfig's server. With opts.Refresh
// only an existing registration is renewed, keeping its namespaces unless
// opts.Namespaces names others. Before any token is requested, every
// namespace of the registration must carry the Pod Security enforce level
// the access chart gives it (see checkPodSecurity); otherwise Register
// returns an error wrapping ErrUnlabelledNamespace, unless
// opts.AllowUnlabelledNamespaces turns the refusal into warnings on out.
// mgmt writes to the management cluster. Empty optional fields of opts take
// their defaults. Register prints one line to out saying what it did, after
// any warnings (out may be nil); nothing it prints and no error it returns
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
	if opts.Refresh {
		if namespaces, err = existingNamespaces(ctx, mgmt, opts, namespaces); err != nil {
			return nil, err
		}
	}
	// Checked before a token exists, so that a refusal leaves nothing behind.
	if err := checkPodSecurity(ctx, cs, opts, namespaces, out); err != nil {
		return nil, err
	}
	token, err := requestToken(ctx, cs.CoreV1(), opts)
	if err != nil {
		return nil, err
	}
	// The token is bound, so no token Secret hands over the cluster's CA;
	// the registrant's own context trusts the right one.
	ca, err := contextCA(compute)
	if err != nil {
		return nil, err
	}
	raw, err := buildKubeconfig(opts.ClusterName, &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, ServerName: compute.ServerName},
		BearerToken:     token.value,
	})
	if err != nil {
		return nil, err
	}

	want := targetcluster.BuildRegistrationSecret(opts.ClusterName, opts.ClustersNamespace, raw, namespaces)
	action, stored, err := writeRegistration(ctx, mgmt, want)
	if err != nil {
		// The apiserver, or a webhook in front of it, may echo the object
		// back in an error; scrub the credential from whatever it says.
		return nil, newRedactor(token.value, raw).redact(err)
	}

	scope := "cluster-wide"
	if namespaces != "" {
		scope = "namespaces " + namespaces
	}
	fmt.Fprintf(out, "registration Secret %s/%s %s (server %s, %s, token expires %s; renew it before then with --refresh)\n",
		want.Namespace, want.Name, action, server, scope, token.expires.UTC().Format(time.RFC3339))
	return &Result{Secret: stored, Action: action, Server: server, Namespaces: namespaces, Expires: token.expires}, nil
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

// contextCA returns the CA the registrant's own context trusts. nil means
// the system's trust roots.
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

// existingNamespaces returns the namespaces of the registration a refresh
// renews: those given, or else the ones it holds. A refresh of a
// registration that does not exist, or of a Secret that is not one, is
// refused, since it would otherwise make a cluster-wide registration.
func existingNamespaces(ctx context.Context, c client.Client, opts Options, given string) (string, error) {
	ref := opts.ClustersNamespace + "/" + opts.ClusterName
	got := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: opts.ClustersNamespace, Name: opts.ClusterName}, got); err != nil {
		if apierrors.IsNotFound(err) {
			return "", fmt.Errorf("--refresh: there is no registration Secret %s to renew; register the cluster first", ref)
		}
		return "", fmt.Errorf("reading Secret %s on the management cluster: %w", ref, err)
	}
	if got.Labels[targetcluster.RegistrationLabel] != "true" {
		return "", fmt.Errorf("--refresh: secret %s exists on the management cluster without the label %s=true; refusing to overwrite it: %w",
			ref, targetcluster.RegistrationLabel, ErrNotRegistration)
	}
	if given != "" {
		return given, nil
	}
	return string(got.Data[targetcluster.NamespacesKey]), nil
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
