package testenv

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PutSecret creates or replaces a Secret on c with the given string data.
func (c *Cluster) PutSecret(tb testing.TB, namespace, name string, data map[string]string) {
	tb.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	err := c.Client.Get(ctx, client.ObjectKeyFromObject(s), s)
	s.Data = map[string][]byte{}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	if err == nil {
		err = c.Client.Update(ctx, s)
	} else {
		err = c.Client.Create(ctx, s)
	}
	if err != nil {
		tb.Fatal(err)
	}
}

// EventMessages returns the message of every event on c.
func (c *Cluster) EventMessages(tb testing.TB) []string {
	tb.Helper()
	events := &corev1.EventList{}
	if err := c.Client.List(context.Background(), events); err != nil {
		tb.Fatal(err)
	}
	out := make([]string, 0, len(events.Items))
	for _, e := range events.Items {
		out = append(out, e.Message)
	}
	return out
}

// ConditionMessages returns the message of every condition given.
func ConditionMessages(conds []metav1.Condition) []string {
	out := make([]string, 0, len(conds))
	for _, c := range conds {
		out = append(out, c.Message)
	}
	return out
}

// AssertNoLeak fails the test when any secret appears in any text: a log,
// an event message, a condition message. It reports the size of what
// leaked, never the value.
func AssertNoLeak(tb testing.TB, texts, secrets []string) {
	tb.Helper()
	for _, text := range texts {
		for _, secret := range secrets {
			if secret != "" && strings.Contains(text, secret) {
				tb.Errorf("a credential leaked into the log, an event or a condition (%d bytes)", len(secret))
			}
		}
	}
}
