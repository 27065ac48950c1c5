package clusterreg

import (
	"context"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// Limits of a registration token's lifetime. The apiserver refuses less
// than ten minutes; a year bounds how long a stolen registration stays
// useful when nobody refreshes it.
const (
	MinTokenExpiration = 10 * time.Minute
	MaxTokenExpiration = 365 * 24 * time.Hour
)

// boundToken is a token the apiserver issued for the chart's
// ServiceAccount, and when it stops working.
type boundToken struct {
	value   string
	expires time.Time
}

// requestToken asks the compute cluster for a token of the chart's
// ServiceAccount that expires after opts.TokenExpiration (or earlier, if
// the apiserver caps it). A token from the TokenRequest API is bound to
// the ServiceAccount: deleting the account, as uninstalling the chart
// does, ends it, unlike a token Secret that survives in any copy. A
// missing ServiceAccount is waited for, since the chart may have been
// installed a moment ago.
func requestToken(ctx context.Context, sas corev1client.ServiceAccountsGetter, opts Options) (boundToken, error) {
	ns, name := opts.AccessNamespace, opts.ServiceAccount
	seconds := int64(opts.TokenExpiration / time.Second)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds}}
	var got boundToken
	var missing bool
	// The requests use the caller's context, not the poll's: client-go's
	// rate limiter fails a request early when its context's deadline is
	// near, which would turn the plain timeout into a confusing error.
	err := wait.PollUntilContextTimeout(ctx, pollInterval, opts.Timeout, true, func(context.Context) (bool, error) {
		tr, err := sas.ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			missing = true
			return false, nil
		}
		if err != nil {
			// The response of a TokenRequest holds the token, and an error
			// carries no response body here; name only what was asked.
			return false, fmt.Errorf("requesting a token for ServiceAccount %s/%s on the compute cluster: %w", ns, name, err)
		}
		if tr.Status.Token == "" {
			return false, fmt.Errorf("the compute cluster issued an empty token for ServiceAccount %s/%s", ns, name)
		}
		got = boundToken{value: tr.Status.Token, expires: tr.Status.ExpirationTimestamp.Time}
		return true, nil
	})
	switch {
	case err == nil:
		return got, nil
	case !wait.Interrupted(err):
		return boundToken{}, err
	case ctx.Err() != nil:
		return boundToken{}, fmt.Errorf("requesting a token for ServiceAccount %s/%s on the compute cluster: %w", ns, name, ctx.Err())
	case missing:
		return boundToken{}, fmt.Errorf("ServiceAccount %s/%s does not exist on the compute cluster after %s; install the target-cluster-access chart there first, or pass the --access-namespace and --service-account it was installed with", ns, name, opts.Timeout)
	default:
		return boundToken{}, fmt.Errorf("no token for ServiceAccount %s/%s after %s", ns, name, opts.Timeout)
	}
}
