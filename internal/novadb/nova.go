package novadb

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// Keys of a Nova's database Secret, as the Nova reads them.
const (
	UsernameKey = "username"
	PasswordKey = "password"
)

// ErrNoCellDatabase is a Nova without spec.database: there is nothing to
// read.
var ErrNoCellDatabase = errors.New("the Nova declares no spec.database")

// ConfigForNova returns the connection to a Nova's cell database: the host,
// port and schema of its spec.database, and the credentials of the Secret
// that names, read with reader from the Nova's namespace. reader must reach
// the cluster the Secret is on, which is the Nova's. The errors name the
// Secret and its keys, never a value.
func ConfigForNova(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (Config, error) {
	db := nova.Spec.Database
	if db == nil {
		return Config{}, ErrNoCellDatabase
	}
	secret := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: nova.Namespace, Name: db.SecretRef.Name}, secret); err != nil {
		return Config{}, fmt.Errorf("reading the cell database Secret %s/%s: %w", nova.Namespace, db.SecretRef.Name, err)
	}
	user, password := string(secret.Data[UsernameKey]), string(secret.Data[PasswordKey])
	if user == "" || password == "" {
		return Config{}, fmt.Errorf("the cell database Secret %s/%s lacks the key %s or %s", nova.Namespace, db.SecretRef.Name, UsernameKey, PasswordKey)
	}
	return Config{
		// A zero port is the API's default, which a Nova built without
		// the apiserver's defaulting may lack.
		Host: db.Host, Port: cmp.Or(db.Port, novav1alpha1.DefaultDatabasePort), Database: db.Database,
		Username: user, Password: password, Timeout: DefaultTimeout,
	}, nil
}
