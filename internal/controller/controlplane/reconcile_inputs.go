package controlplane

import (
	"bytes"
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/anvil/anvil/internal/childwriter"
)

// deliverInput writes one of the Nova's input Secrets with data and
// records data for the mirror step, which renders from what the pass
// delivers (deliveredReader). A Secret this ControlPlane already wrote,
// whose content changes, is written beside the rest of the pass: the Nova
// reads it by a name it already has, and its watch takes the new content
// whenever the write lands, so neither the mirrors nor the Nova's apply
// wait for it; awaitNova reports how it went. A new Secret is written in
// line, since the Nova may be applied naming it, and so is a foreign one,
// whose refusal stops the pass before any mirror is written. wrap
// classifies a failure.
func (r *Reconciler) deliverInput(ctx context.Context, p *pass, name string, data map[string][]byte, wrap func(error) error) error {
	p.delivered[name] = data
	if !r.changesOwnInput(ctx, p, name, data) {
		if err := r.applyLocalSecret(ctx, p.cp, name, data); err != nil {
			return wrap(err)
		}
		return nil
	}
	// The write reads its owner while the pass writes the ControlPlane's
	// status, so it gets a copy of its own.
	owner, done := p.cp.DeepCopy(), make(chan error, 1)
	go func() {
		if err := r.applyLocalSecret(ctx, owner, name, data); err != nil {
			done <- wrap(err)
			return
		}
		done <- nil
	}()
	p.inputWrites = append(p.inputWrites, done)
	return nil
}

// changesOwnInput tells whether the cache holds the named Secret as this
// ControlPlane's child with other content than data.
func (r *Reconciler) changesOwnInput(ctx context.Context, p *pass, name string, data map[string][]byte) bool {
	live := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.cp.Namespace, Name: name}, live); err != nil {
		return false
	}
	return childwriter.Controls(p.cp, live, r.Scheme) && !maps.EqualFunc(live.Data, data, bytes.Equal)
}

// joinInputWrites waits for the input Secrets written beside the pass and
// returns the first failure.
func (p *pass) joinInputWrites() error {
	var first error
	for _, done := range p.inputWrites {
		if err := <-done; err != nil && first == nil {
			first = err
		}
	}
	p.inputWrites = nil
	return first
}
