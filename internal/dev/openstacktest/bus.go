package openstacktest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/anvil/anvil/internal/dev/localcloud"
)

// The set's broker, as hack/openstack/openstack.sh runs it: its Erlang
// node, its rabbitmqctl, and the ports.env key of the epmd its node
// registers with.
const (
	rabbitNode    = "anvil@localhost"
	rabbitmqctl   = "/usr/lib/rabbitmq/bin/rabbitmqctl"
	epmdPortKey   = "ANVIL_OPENSTACK_EPMD_PORT"
	rabbitVHost   = "/"
	rabbitAllPerm = ".*"
)

// BusUser creates a broker user with every right on vhost / and deletes it
// later. It returns the TLS transport URL that logs in as it, the password
// in the URL as url.UserPassword spells it, which leaves a '$' as it is.
func (cl *Cleanup) BusUser(local *localcloud.Cloud, name, password string) string {
	cl.tb.Helper()
	base, err := local.TransportURL(true)
	if err != nil {
		cl.tb.Fatalf("reading the set's transport URL: %v", err)
	}
	u, err := url.Parse(base)
	if err != nil {
		// url.Error quotes the URL, which holds the nova bus password.
		cl.tb.Fatal("the set's transport URL does not parse")
	}
	u.User = url.UserPassword(name, password)
	ctx := cl.tb.Context()
	// The password goes in on stdin, never in argv, which every local
	// user can read.
	if err := runRabbitmqctl(ctx, local, password+"\n", "add_user", name); err != nil {
		cl.tb.Fatalf("creating broker user %s: %v", name, err)
	}
	cl.add("broker user "+name, func(ctx context.Context) error {
		return runRabbitmqctl(ctx, local, "", "delete_user", name)
	})
	if err := runRabbitmqctl(ctx, local, "", "set_permissions", "-p", rabbitVHost, name, rabbitAllPerm, rabbitAllPerm, rabbitAllPerm); err != nil {
		cl.tb.Fatalf("granting broker user %s vhost /: %v", name, err)
	}
	return u.String()
}

// BrokerLogin tells whether the set's broker accepts user with password.
// The password goes in on stdin, as in BusUser.
func BrokerLogin(ctx context.Context, local *localcloud.Cloud, user, password string) bool {
	return runRabbitmqctl(ctx, local, password+"\n", "authenticate_user", user) == nil
}

// BrokerUserExists tells whether the set's broker has the named user.
func BrokerUserExists(ctx context.Context, local *localcloud.Cloud, user string) (bool, error) {
	out, err := rabbitmqctlOutput(ctx, local, "list_users", "--silent")
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(out, "\n") {
		if name, _, _ := strings.Cut(line, "\t"); name == user {
			return true, nil
		}
	}
	return false, nil
}

// runRabbitmqctl runs rabbitmqctl against the set's node with stdin as its
// input. Its error holds the tool's last output line, which names users
// and vhosts but never echoes a password read from stdin.
func runRabbitmqctl(ctx context.Context, local *localcloud.Cloud, stdin string, args ...string) error {
	_, err := rabbitmqctlWith(ctx, local, stdin, args...)
	return err
}

// rabbitmqctlOutput runs rabbitmqctl without input and returns its output.
func rabbitmqctlOutput(ctx context.Context, local *localcloud.Cloud, args ...string) (string, error) {
	return rabbitmqctlWith(ctx, local, "", args...)
}

func rabbitmqctlWith(ctx context.Context, local *localcloud.Cloud, stdin string, args ...string) (string, error) {
	ports, err := readPorts(local.Dir)
	if err != nil {
		return "", err
	}
	epmd, ok := ports[epmdPortKey]
	if !ok {
		return "", errors.New("ports.env has no " + epmdPortKey)
	}
	cmd := exec.CommandContext(ctx, rabbitmqctl, append([]string{"-n", rabbitNode}, args...)...)
	cmd.Env = []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + filepath.Join(local.Dir, "rabbitmq", "home"),
		"ERL_EPMD_ADDRESS=127.0.0.1",
		"ERL_EPMD_PORT=" + epmd,
		"RABBITMQ_USE_LONGNAME=false",
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("rabbitmqctl %s: %w: %s", args[0], err, tail(out.String(), 1))
	}
	return out.String(), nil
}

// readPorts reads the KEY=value lines of the ports.env the set's script
// writes beside endpoints.env; it holds port numbers only.
func readPorts(dir string) (map[string]string, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "ports.env"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			out[k] = v
		}
	}
	return out, nil
}
