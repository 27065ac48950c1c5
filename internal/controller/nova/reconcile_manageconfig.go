package nova

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

// Keys of a database's Secret.
const (
	databaseUsernameKey = "username"
	databasePasswordKey = "password"
)

// ManageConfigName is the name of a Nova's nova-manage configuration.
func ManageConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.ManageConfigSuffix
}

// reconcileManageConfig publishes {nova}-manage-config while both databases
// are declared, and removes it once neither is. It holds the databases
// alone, so the pools' host discovery Jobs can reach them without reading
// the control plane's whole nova.conf. The last published Secret and its reference
// are kept on a failure, as the compute contract's are: a job mid-run keeps
// working configuration.
func (r *Reconciler) reconcileManageConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova, children := p.nova, p.children
	spec := nova.Spec
	switch {
	case spec.APIDatabase == nil && spec.Database == nil:
		manage := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nova.Namespace, Name: ManageConfigName(nova)}}
		if _, err := children.Delete(ctx, nova, manage); err != nil {
			return flow.Continue, err
		}
		nova.Status.ManageConfigSecretRef = nil
		conditionsOf(nova).Set(novav1alpha1.ManageConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ManageConfigNotRequiredReason,
			"neither spec.apiDatabase nor spec.database is set")
		return flow.Continue, nil
	case spec.APIDatabase == nil || spec.Database == nil:
		// nova-manage needs both; half a configuration would fail later,
		// inside a Job, with a less helpful message.
		set, unset := "spec.apiDatabase", "spec.database"
		if spec.APIDatabase == nil {
			set, unset = unset, set
		}
		return flow.Continue, flow.Invalid(novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason,
			fmt.Errorf("%s is set without %s: nova-manage needs both databases", set, unset))
	}

	in, err := readManageInput(ctx, children.Reader, nova)
	if err != nil {
		return flow.Continue, manageConfigError(err)
	}
	conf, err := novaconfig.RenderManageConfig(*in)
	if err != nil {
		// The renderer's errors name a field or a section, never a value.
		return flow.Continue, flow.Invalid(novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason, fmt.Errorf("spec: %w", err))
	}
	if err := children.Apply(ctx, nova, buildManageConfigSecret(nova, conf)); err != nil {
		return flow.Continue, manageConfigError(err)
	}
	nova.Status.ManageConfigSecretRef = &anvilmeta.LocalObjectReference{Name: ManageConfigName(nova)}
	p.manage, p.manageConf = in, conf
	conditionsOf(nova).Set(novav1alpha1.ManageConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ManageConfigPublishedReason,
		"published "+ManageConfigName(nova))
	return flow.Continue, nil
}

// manageConfigError classifies a failure of the ManageConfig step: a
// missing database Secret is a wait (the Secret watch normally brings the
// next pass first), a Secret Anvil does not own is invalid, and anything
// else is retried.
func manageConfigError(err error) error {
	var (
		missing  *inputs.MissingError
		notOwned *childwriter.NotOwnedError
	)
	switch {
	case errors.As(err, &missing):
		return flow.Wait(novav1alpha1.ManageConfigReadyCondition, novav1alpha1.WaitingForDatabaseSecretReason, inputWait, "%s", err.Error())
	case errors.As(err, &notOwned):
		return flow.Invalid(novav1alpha1.ManageConfigReadyCondition, novav1alpha1.ManageConfigErrorReason, err)
	}
	return err
}

// readManageInput reads both databases' credentials from their Secrets.
func readManageInput(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (*novaconfig.ManageInput, error) {
	api, err := readDatabase(ctx, reader, nova.Namespace, "spec.apiDatabase.secretRef", nova.Spec.APIDatabase)
	if err != nil {
		return nil, err
	}
	cell, err := readDatabase(ctx, reader, nova.Namespace, "spec.database.secretRef", nova.Spec.Database)
	if err != nil {
		return nil, err
	}
	return &novaconfig.ManageInput{APIDatabase: api, Database: cell}, nil
}

// readDatabase fills a database's connection from its spec and Secret.
func readDatabase(ctx context.Context, reader client.Reader, namespace, field string, db *novav1alpha1.DatabaseSpec) (novaconfig.Database, error) {
	user, err := inputs.ReadKey(ctx, reader, namespace, field, db.SecretRef.Name, databaseUsernameKey)
	if err != nil {
		return novaconfig.Database{}, err
	}
	password, err := inputs.ReadKey(ctx, reader, namespace, field, db.SecretRef.Name, databasePasswordKey)
	if err != nil {
		return novaconfig.Database{}, err
	}
	return buildDatabase(db, user, password), nil
}

// buildDatabase renders a database's connection input from its spec and
// credentials. A zero port is the API's default, which a Nova built
// without the apiserver's defaulting may lack.
func buildDatabase(db *novav1alpha1.DatabaseSpec, user, password string) novaconfig.Database {
	return novaconfig.Database{Host: db.Host, Port: cmp.Or(db.Port, novav1alpha1.DefaultDatabasePort), Database: db.Database,
		Username: user, Password: password}
}

// buildManageConfigSecret renders {nova}-manage-config from its fragment.
func buildManageConfigSecret(nova *novav1alpha1.Nova, conf []byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ManageConfigName(nova),
			Namespace: nova.Namespace,
			Labels:    map[string]string{novav1alpha1.ComponentLabel: novav1alpha1.ManageConfigComponent},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{novaconfig.KeyManageConfig: conf},
	}
}
