package controlplane

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
)

// Ownership marks alone cannot vouch for a generated value: anyone who may
// create Secrets beside the ControlPlane can copy its labels or owner
// reference onto a Secret of the expected name before Anvil creates it.
// Anvil would then adopt a password the planter chose and set it in
// Keystone. So every value Anvil generates is also recorded, as a digest,
// in the ControlPlane's status, which only the operator writes; a value
// without a recorded digest is replaced, never used.

// GeneratedDigest is the digest status.generatedSecrets records for value,
// the generated content of the Secret name. The name is hashed in so one
// entry cannot vouch for the same value under another Secret.
func GeneratedDigest(name, value string) string {
	sum := sha256.Sum256([]byte("anvil generated secret\x00" + name + "\x00" + value))
	return hex.EncodeToString(sum[:])
}

// Vouches tells whether entries record value as generated for name.
func Vouches(entries []c5c3v1alpha1.GeneratedSecret, name, value string) bool {
	if value == "" {
		return false
	}
	want := GeneratedDigest(name, value)
	return slices.ContainsFunc(entries, func(e c5c3v1alpha1.GeneratedSecret) bool {
		return e.Name == name && e.Digest == want
	})
}

// RecordGenerated returns entries with name's digest set to that of value,
// kept sorted by name so the status does not change with the order of
// steps.
func RecordGenerated(entries []c5c3v1alpha1.GeneratedSecret, name, value string) []c5c3v1alpha1.GeneratedSecret {
	entries = ForgetGenerated(entries, name)
	entries = append(entries, c5c3v1alpha1.GeneratedSecret{Name: name, Digest: GeneratedDigest(name, value)})
	slices.SortFunc(entries, func(a, b c5c3v1alpha1.GeneratedSecret) int { return cmp.Compare(a.Name, b.Name) })
	return entries
}

// ForgetGenerated returns entries without name's entry, once Anvil has
// deleted that Secret.
func ForgetGenerated(entries []c5c3v1alpha1.GeneratedSecret, name string) []c5c3v1alpha1.GeneratedSecret {
	return slices.DeleteFunc(slices.Clone(entries), func(e c5c3v1alpha1.GeneratedSecret) bool { return e.Name == name })
}

// ensureGenerated makes the Secret s exist with a value under key that
// Anvil generated, and returns that value. s arrives holding a freshly
// generated value; replace asks for it even when the Secret exists (a
// reissue). An existing value is kept only when the status vouches for
// it. It returns "" while a create met a Secret the cache has not seen,
// whose value the next pass reads.
func (r *Reconciler) ensureGenerated(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, s *corev1.Secret, key string, replace bool) (string, error) {
	fresh := s.DeepCopy()
	local := childwriter.Local(r.Client, r.Scheme)
	if !replace {
		if err := local.Apply(ctx, cp, s, childwriter.CreateOnly); err != nil {
			return "", err
		}
		if s.ResourceVersion == "" {
			return "", nil
		}
		got := string(s.Data[key])
		ours := got != "" && got == string(fresh.Data[key])
		if !ours && got != "" {
			var err error
			if ours, err = r.vouched(ctx, cp, s.Name, got); err != nil {
				return "", err
			}
		}
		if ours {
			cp.Status.GeneratedSecrets = RecordGenerated(cp.Status.GeneratedSecrets, s.Name, got)
			return got, nil
		}
		r.Recorder.Eventf(cp, &corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: s.Namespace, Name: s.Name},
			corev1.EventTypeWarning, c5c3v1alpha1.GeneratedSecretReplacedEvent, "Replace",
			"Secret %s/%s carried a value this ControlPlane did not generate; it gets a new one", s.Namespace, s.Name)
		s = fresh
	}
	if err := local.Apply(ctx, cp, s); err != nil {
		return "", err
	}
	value := string(s.Data[key])
	cp.Status.GeneratedSecrets = RecordGenerated(cp.Status.GeneratedSecrets, s.Name, value)
	return value, nil
}

// vouched tells whether the ControlPlane's status records value for name.
// The cached status may lag a patch of the previous pass, which recorded a
// value that pass created, so before calling a value foreign it reads the
// ControlPlane past the cache; that read happens only on a mismatch. A
// failed read is an error, not a verdict: a transient failure must not
// rotate a password.
func (r *Reconciler) vouched(ctx context.Context, cp *c5c3v1alpha1.ControlPlane, name, value string) (bool, error) {
	if Vouches(cp.Status.GeneratedSecrets, name, value) {
		return true, nil
	}
	if r.APIReader == nil {
		return false, nil
	}
	live := &c5c3v1alpha1.ControlPlane{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cp), live); err != nil {
		return false, fmt.Errorf("reading ControlPlane %s/%s past the cache: %w", cp.Namespace, cp.Name, err)
	}
	return live.UID == cp.UID && Vouches(live.Status.GeneratedSecrets, name, value), nil
}
