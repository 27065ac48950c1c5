package nova

import (
	"crypto/sha256"
	"encoding/hex"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// Labels of the database Jobs.
const (
	// databaseComponent is the component label value of every database Job.
	databaseComponent = "database"
	// RolloutLabel carries the hash of the release and image a database
	// Job belongs to, so Jobs of earlier rollouts can be found and removed.
	RolloutLabel = "nova.openstack.c5c3.io/rollout"
	// DatabaseStepLabel names the step a database Job runs.
	DatabaseStepLabel = "nova.openstack.c5c3.io/database-step"
)

// DatabaseStep is one database Job: what it runs and what it proves once it
// succeeded.
type DatabaseStep struct {
	// Name is the Job's step, part of its name: {nova}-db-{step}-{rollout}.
	Name string
	// Command is the container's command line.
	Command []string
	// Maps is the cell the step maps, if any.
	Maps string
	// Syncs is true for the step after which both cells' schemas are at
	// the release.
	Syncs bool
}

// createCell1Script maps cell1, or points an existing mapping at this
// Nova's bus and database: create_cell refuses a second mapping of the same
// database, and the mapping carries the credentials the API and the
// conductor reach the cell with, so it must follow a rotated one.
const createCell1Script = `set -e
uuid=$(nova-manage --config-file ` + configFile + ` cell_v2 list_cells | awk -F'|' '$2 ~ /^ *cell1 *$/ {gsub(/ /, "", $3); print $3}')
if [ -n "$uuid" ]; then
  echo "cell1 is mapped already; updating its bus and database"
  exec nova-manage --config-file ` + configFile + ` cell_v2 update_cell --cell_uuid "$uuid"
fi
exec nova-manage --config-file ` + configFile + ` cell_v2 create_cell --name cell1 --verbose`

// databaseSteps are the Jobs of a rollout, in the order they run. Each is
// idempotent, so running the list again on a synced database changes
// nothing: the syncs stop at the current schema, map_cell0 accepts an
// existing mapping, cell1 is looked up first, and the online migrations
// find nothing left to do.
var databaseSteps = []DatabaseStep{
	{Name: "api", Command: manage("api_db", "sync")},
	{Name: "cell0", Command: manage("cell_v2", "map_cell0"), Maps: "cell0"},
	{Name: "cell1", Command: []string{"sh", "-c", createCell1Script}, Maps: "cell1"},
	{Name: "sync", Command: manage("db", "sync"), Syncs: true},
	{Name: "migrate", Command: manage("db", "online_data_migrations")},
}

// manage is a nova-manage command line against {nova}-config.
func manage(args ...string) []string {
	return append([]string{"nova-manage", "--config-file", configFile}, args...)
}

// RolloutHash identifies a rollout of the database Jobs: the image, the
// release and the hash of the settings the Jobs act on (DatabaseHash). A
// new value of any runs the Jobs again before any Deployment rolls: the
// image and the release move schemas, and cell1's mapping carries the bus
// and database credentials.
func RolloutHash(nova *novav1alpha1.Nova, databaseHash string) string {
	sum := sha256.Sum256([]byte(nova.Spec.Image.Reference() + "\n" + nova.Spec.OpenStackRelease + "\n" + databaseHash))
	return hex.EncodeToString(sum[:])[:8]
}

// DatabaseHash is the hash of what the database Jobs act on:
// nova-manage.conf, which holds both database connections, and the bus URL
// cell1's mapping records. The rest of nova.conf, the service password
// above all, is left out, so rotating it rolls the Deployments without
// running five Jobs again.
func DatabaseHash(manageConf []byte, transportURL string) string {
	return novaconfig.Hash(map[string][]byte{novaconfig.KeyManageConfig: manageConf, novaconfig.KeyTransportURL: []byte(transportURL)})
}

// DatabaseJobName is {nova}-db-{step}-{rollout}; with the Nova name's
// limit of 41 characters it stays within the 63 a Job's pod label allows.
func DatabaseJobName(nova *novav1alpha1.Nova, step DatabaseStep, rollout string) string {
	return nova.Name + "-db-" + step.Name + "-" + rollout
}

// BuildDatabaseJob renders one database Job of a rollout. It is pure.
// A failed pod is retried twice; after that the Job fails and holds the
// rollout until someone looks, since a schema migration that keeps failing
// needs a person.
func BuildDatabaseJob(nova *novav1alpha1.Nova, step DatabaseStep, rollout string) *batchv1.Job {
	labels := map[string]string{
		nameLabel: novaNameValue, instanceLabel: nova.Name, componentLabel: databaseComponent,
		RolloutLabel: rollout, DatabaseStepLabel: step.Name,
	}
	c := corev1.Container{
		Name:            "nova-manage",
		Image:           nova.Spec.Image.Reference(),
		ImagePullPolicy: corev1.PullPolicy(nova.Spec.Image.PullPolicy),
		Command:         step.Command,
		Resources:       resources("100m", "512Mi"),
		SecurityContext: containerSecurity(),
		VolumeMounts:    configMounts(),
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: DatabaseJobName(nova, step, rollout), Namespace: nova.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:          ptr.To[int32](2),
			ActiveDeadlineSeconds: ptr.To[int64](3600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       podSpec(nova, []corev1.Container{c}, corev1.RestartPolicyNever),
			},
		},
	}
}

// JobState is where a Job stands.
type JobState int

// The states of a Job.
const (
	JobRunning JobState = iota
	JobSucceeded
	JobFailed
)

// StateOf reads a Job's terminal conditions.
func StateOf(j *batchv1.Job) JobState {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return JobSucceeded
		case batchv1.JobFailed:
			return JobFailed
		}
	}
	return JobRunning
}
