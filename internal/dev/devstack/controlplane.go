package devstack

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
	"github.com/anvil/anvil/internal/openstack"
)

// The sample ControlPlane and the Secrets it references. The names are the
// ones the user guides use: the ControlPlane controlplane projects the Nova
// controlplane-nova.
const (
	// SampleControlPlane is the name of the devstack's ControlPlane, in
	// testenv.WorkloadNamespace on the management cluster.
	SampleControlPlane = "controlplane"
	// BusSecret holds the in-cluster transport URL under transport_url.
	BusSecret = "devstack-bus"
	// BusCASecret holds the broker's CA bundle under ca.crt.
	BusCASecret = "devstack-bus-ca"
	// NovaPasswordSecret holds the nova service user's password under
	// password.
	NovaPasswordSecret = "devstack-nova-password"
	// NovaDBSecret holds the nova database user's credentials under
	// username and password: with the OpenStack services those of their
	// MariaDB, else a random password nothing checks.
	NovaDBSecret = "devstack-nova-db"
	// KeystoneAdminSecret holds the local Keystone's admin credentials, with
	// which the ControlPlane creates the hypervisor operator's account. It
	// exists only with the OpenStack services.
	KeystoneAdminSecret = "devstack-keystone-admin"
)

// The local MariaDB's databases and user, as hack/openstack/openstack.sh
// creates them.
const (
	novaAPIDatabase  = "nova_api"
	novaCellDatabase = "nova"
	novaDBUser       = "nova"
	localDBHost      = "127.0.0.1"
)

// localComputeURL is where the pod runner serves the Nova's API: the
// container's port on 127.0.0.1.
const localComputeURL = "http://127.0.0.1:8774/v2.1"

// The release and image the sample Nova declares. The management
// cluster's pods are run by the pod runner or simulated by kwok, so the
// image is never pulled; it only has to pass admission.
const (
	sampleRelease    = "2026.1"
	sampleRepository = "ghcr.io/c5c3/nova"
)

// applySampleControlPlane writes the Secrets and the ControlPlane the guides
// start from. It runs after installWebhooks, so the ControlPlane passes the
// same admission a user's does.
//
// The Secrets are created once: their random values are kept on every
// later `up`, since rotating them would roll the whole control plane. Only
// the CA bundle follows the devstack CA; with the OpenStack services every
// Secret is overwritten from their state instead, which is what the
// services accept. An existing ControlPlane is left alone, because the
// guides patch it (step 1 adds remoteCompute) and a re-run must not undo
// that.
func (s *Stack) applySampleControlPlane(ctx context.Context, _ *state) (string, error) {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return "", err
	}
	caPEM, err := os.ReadFile(s.caCertPath())
	if err != nil {
		return "", err
	}
	var cloud *sampleCloud
	if s.openstack {
		if cloud, err = s.loadSampleCloud(); err != nil {
			return "", err
		}
		caPEM = cloud.busCA
	}
	secrets := []sampleSecret{
		{BusSecret, func(d map[string][]byte) error {
			if cloud != nil {
				d["transport_url"] = []byte(cloud.transportURL)
				return nil
			}
			if len(d["transport_url"]) > 0 {
				return nil
			}
			pw, err := randomToken()
			if err != nil {
				return err
			}
			// Without the OpenStack services no broker runs, so nothing
			// dials this URL; it only has to be well-formed for the
			// compute contract.
			d["transport_url"] = []byte(busURL(pw))
			return nil
		}},
		{BusCASecret, func(d map[string][]byte) error {
			d["ca.crt"] = caPEM
			return nil
		}},
		{NovaPasswordSecret, func(d map[string][]byte) error {
			if cloud != nil {
				d["password"] = []byte(cloud.novaPassword)
				return nil
			}
			if len(d["password"]) > 0 {
				return nil
			}
			pw, err := randomToken()
			if err != nil {
				return err
			}
			d["password"] = []byte(pw)
			return nil
		}},
	}
	secrets = append(secrets, sampleSecret{NovaDBSecret, func(d map[string][]byte) error {
		d["username"] = []byte(novaDBUser)
		if cloud != nil {
			d["password"] = []byte(cloud.novaDBPassword)
			return nil
		}
		if len(d["password"]) > 0 {
			return nil
		}
		// Without the OpenStack services kwok only simulates the Nova's
		// pods and Jobs, so nothing opens this database.
		pw, err := randomToken()
		d["password"] = []byte(pw)
		return err
	}})
	if cloud != nil {
		secrets = append(secrets, sampleSecret{KeystoneAdminSecret, func(d map[string][]byte) error {
			a := cloud.admin
			d["username"], d["password"], d["project_name"] = []byte(a.Username), []byte(a.Password), []byte(a.ProjectName)
			d["user_domain_name"], d["project_domain_name"] = []byte(a.UserDomainName), []byte(a.ProjectDomainName)
			return nil
		}})
	}
	names := make([]string, 0, len(secrets))
	for _, sec := range secrets {
		got := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: sec.name, Namespace: testenv.WorkloadNamespace}}
		if _, err := controllerutil.CreateOrUpdate(ctx, c, got, func() error {
			if got.Labels == nil {
				got.Labels = map[string]string{}
			}
			got.Labels[managedByLabel] = managedByValue
			if got.CreationTimestamp.IsZero() {
				got.Type = corev1.SecretTypeOpaque
			}
			if got.Data == nil {
				got.Data = map[string][]byte{}
			}
			return sec.fill(got.Data)
		}); err != nil {
			// The error names the Secret, never its data.
			return "", fmt.Errorf("sample Secret %s/%s: %w", testenv.WorkloadNamespace, sec.name, err)
		}
		names = append(names, sec.name)
	}

	cp := sampleControlPlane(cloud)
	err = c.Create(ctx, cp)
	switch {
	case err == nil:
		return fmt.Sprintf("created ControlPlane %s/%s with Secrets %s", testenv.WorkloadNamespace, SampleControlPlane, strings.Join(names, ", ")), nil
	case apierrors.IsAlreadyExists(err):
		return fmt.Sprintf("ControlPlane %s/%s exists and is left as it is", testenv.WorkloadNamespace, SampleControlPlane), nil
	default:
		return "", fmt.Errorf("ControlPlane %s/%s: %w", testenv.WorkloadNamespace, SampleControlPlane, err)
	}
}

// sampleSecret is one Secret the sample ControlPlane reads: fill sets its
// data, given what is there already.
type sampleSecret struct {
	name string
	fill func(map[string][]byte) error
}

// busURL is the in-cluster transport URL of the devstack's (future) broker.
func busURL(password string) string {
	return "rabbit://nova:" + password + "@127.0.0.1:5671/"
}

// randomToken returns 32 random bytes in URL-safe base64, which needs no
// escaping in the user part of a URL or in an INI file.
func randomToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// sampleCloud is what the sample objects take from the local OpenStack
// services: their endpoints, the bus the computes dial (the TLS listener)
// with its CA, the nova service user's password, and the MariaDB port and
// nova database password that host discovery needs.
type sampleCloud struct {
	transportURL, novaPassword       string
	busCA                            []byte
	keystone, keystonePublic, region string
	placement, neutron, glance       string
	mariaDBPort                      int32
	novaDBPassword                   string
	admin                            openstack.Credentials
}

// loadSampleCloud reads the running service set's state directory.
func (s *Stack) loadSampleCloud() (*sampleCloud, error) {
	local, err := localcloud.Load(s.OpenStackDir())
	if err != nil {
		return nil, err
	}
	url, err := local.TransportURL(true)
	if err != nil {
		return nil, errors.New("reading the service set's TLS transport URL file failed")
	}
	pw, err := local.ServicePassword("nova")
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(local.Endpoints[localcloud.RabbitMQCA])
	if err != nil {
		return nil, err
	}
	e := local.Endpoints
	port, err := strconv.ParseInt(e[localcloud.MariaDBPort], 10, 32)
	if err != nil || port < 1 || port > 65535 {
		return nil, fmt.Errorf("the service set's endpoints.env has no valid %s (%q)", localcloud.MariaDBPort, e[localcloud.MariaDBPort])
	}
	dbPassword, err := local.DatabasePassword(novaDBUser)
	if err != nil {
		return nil, err
	}
	return &sampleCloud{
		transportURL: url, novaPassword: pw, busCA: ca,
		keystone: e[localcloud.KeystoneURL], keystonePublic: e[localcloud.KeystonePublicURL], region: e[localcloud.Region],
		placement: e[localcloud.PlacementURL], neutron: e[localcloud.NeutronURL], glance: e[localcloud.ImageURL],
		mariaDBPort: int32(port), novaDBPassword: dbPassword, admin: local.Admin,
	}, nil
}

// sampleControlPlane is the ControlPlane the guides start from: a bus with
// TLS, every referenced service with an https public endpoint, and Nova.
// With cloud set, every address is the local services' (their public
// endpoints are the catalog's, plain http except Keystone's), and Nova
// declares the local MariaDB's nova_api and nova databases, so host
// discovery has a real cell to map computes into, and it asks for the
// hypervisor operator's account with the local Keystone's admin. Without it
// no Keystone runs and kwok simulates the Nova's pods, so the databases are
// declared but never opened, and no account is asked for. It sets no
// remoteCompute; step 1 of "Connect a compute cluster" does.
func sampleControlPlane(cloud *sampleCloud) *c5c3v1alpha1.ControlPlane {
	service := func(name, port string) *c5c3v1alpha1.ReferencedService {
		return &c5c3v1alpha1.ReferencedService{
			InternalEndpoint: "http://127.0.0.1:" + port,
			PublicEndpoint:   "https://" + name + ".127-0-0-1.nip.io",
		}
	}
	keystone := &c5c3v1alpha1.KeystoneSpec{
		InternalEndpoint: "http://127.0.0.1:5000/v3",
		PublicEndpoint:   "https://keystone.127-0-0-1.nip.io/v3",
		Region:           "RegionOne",
	}
	placement, neutron, glance := service("placement", "8778"), service("neutron", "9696"), service("glance", "9292")
	dbPort := novav1alpha1.DefaultDatabasePort
	if cloud != nil {
		dbPort = cloud.mariaDBPort
	}
	database := func(name string) *c5c3v1alpha1.DatabaseSpec {
		return &c5c3v1alpha1.DatabaseSpec{Host: localDBHost, Port: dbPort, Database: name, SecretName: NovaDBSecret}
	}
	apiDB, cellDB := database(novaAPIDatabase), database(novaCellDatabase)
	var hvo *c5c3v1alpha1.HypervisorOperatorSpec
	// The Nova's API pods run on this host, so the catalog names their
	// local port rather than the in-cluster Service no local client can
	// resolve. Without the services nothing registers the catalog.
	var computeURL string
	if cloud != nil {
		local := func(url string) *c5c3v1alpha1.ReferencedService {
			return &c5c3v1alpha1.ReferencedService{InternalEndpoint: url, PublicEndpoint: url}
		}
		keystone = &c5c3v1alpha1.KeystoneSpec{InternalEndpoint: cloud.keystone, PublicEndpoint: cloud.keystonePublic, Region: cloud.region,
			AdminCredentialsSecretRef: &anvilmeta.LocalObjectReference{Name: KeystoneAdminSecret}}
		hvo = &c5c3v1alpha1.HypervisorOperatorSpec{}
		computeURL = localComputeURL
		placement, neutron, glance = local(cloud.placement), local(cloud.neutron), local(cloud.glance)
	}
	return &c5c3v1alpha1.ControlPlane{
		ObjectMeta: metav1.ObjectMeta{
			Name:      SampleControlPlane,
			Namespace: testenv.WorkloadNamespace,
			Labels:    map[string]string{managedByLabel: managedByValue},
		},
		Spec: c5c3v1alpha1.ControlPlaneSpec{
			Infrastructure: c5c3v1alpha1.InfrastructureSpec{
				Messaging: &c5c3v1alpha1.MessagingSpec{
					SecretRef: c5c3v1alpha1.SecretKeyRef{Name: BusSecret, Key: "transport_url"},
					TLS: &c5c3v1alpha1.MessagingTLSSpec{
						CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: BusCASecret, Key: "ca.crt"},
					},
				},
			},
			Services: c5c3v1alpha1.ServicesSpec{
				Keystone:  keystone,
				Placement: placement,
				Neutron:   sampleNeutron(neutron, cloud != nil),
				Glance:    glance,
				Nova: &c5c3v1alpha1.NovaServiceSpec{
					OpenStackRelease:     sampleRelease,
					Image:                anvilmeta.ImageSpec{Repository: sampleRepository, Tag: sampleRelease},
					ServiceUserSecretRef: c5c3v1alpha1.SecretKeyRef{Name: NovaPasswordSecret, Key: "password"},
					APIDatabase:          apiDB,
					Database:             cellDB,
					HypervisorOperator:   hvo,
					// One pod of each service: the devstack runs on a
					// laptop, and each is a real Python process.
					Replicas:         ptr.To[int32](1),
					InternalEndpoint: computeURL,
					PublicEndpoint:   computeURL,
				},
			},
		},
	}
}

// controlPlaneStatus renders "<state>\t<detail>" for the sample
// ControlPlane from its Ready and NovaReady conditions.
func controlPlaneStatus(ctx context.Context, c client.Client) string {
	cp := &c5c3v1alpha1.ControlPlane{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: testenv.WorkloadNamespace, Name: SampleControlPlane}, cp); err != nil {
		if apierrors.IsNotFound(err) {
			return "absent\trun up to create it"
		}
		return "unknown\t" + err.Error()
	}
	return summarizeControlPlane(cp.Status.Conditions)
}

// summarizeControlPlane is controlPlaneStatus without the apiserver.
func summarizeControlPlane(conds []metav1.Condition) string {
	ready := meta.FindStatusCondition(conds, anvilmeta.ReadyCondition)
	nova := meta.FindStatusCondition(conds, c5c3v1alpha1.NovaReadyCondition)
	state := "pending"
	switch {
	case ready == nil:
	case ready.Status == metav1.ConditionTrue:
		state = "ready"
	default:
		state = "not ready"
	}
	var detail string
	for _, cond := range []*metav1.Condition{ready, nova} {
		if cond == nil {
			continue
		}
		if detail != "" {
			detail += ", "
		}
		detail += fmt.Sprintf("%s=%s (%s)", cond.Type, cond.Status, cond.Reason)
	}
	return state + "\t" + cmp.Or(detail, "no conditions yet")
}

// deleteSampleControlPlane deletes the sample ControlPlane while the
// operator still runs, and waits a minute at most for it to go, so that its
// teardown removes what it made outside the clusters: the compute catalog
// entry and the hypervisor operator's account in the shared Keystone. A
// stack that cannot finish this in time goes down anyway; the next `up`
// adopts nothing, since the sample carries the same name and so the same
// Keystone mark.
func (s *Stack) deleteSampleControlPlane(ctx context.Context) {
	c, err := s.clusterClient(ctx, ManagementCluster)
	if err != nil {
		return
	}
	cp := &c5c3v1alpha1.ControlPlane{ObjectMeta: metav1.ObjectMeta{Name: SampleControlPlane, Namespace: testenv.WorkloadNamespace}}
	if err := c.Delete(ctx, cp); err != nil {
		return
	}
	fmt.Fprintln(s.out, "Deleting the sample ControlPlane, so it withdraws its Keystone entries")
	_ = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		err := c.Get(ctx, client.ObjectKeyFromObject(cp), &c5c3v1alpha1.ControlPlane{})
		return apierrors.IsNotFound(err), nil
	})
}

// sampleNeutron is the sample's Neutron; with the OpenStack services it
// runs on the devstack's OVN central, which the ControlPlane references.
func sampleNeutron(endpoints *c5c3v1alpha1.ReferencedService, withCentral bool) *c5c3v1alpha1.NeutronServiceSpec {
	n := &c5c3v1alpha1.NeutronServiceSpec{ReferencedService: *endpoints}
	if withCentral {
		n.OVN = &c5c3v1alpha1.NeutronOVNSpec{CentralRef: c5c3v1alpha1.OVNCentralReference{Name: OVNCentralName}}
	}
	return n
}
