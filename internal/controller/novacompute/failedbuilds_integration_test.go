package novacompute_test

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/dev/localcloud"
	"github.com/anvil/anvil/internal/dev/testenv"
)

// testFailedBuilds writes a failed_builds counter into nodeA1's row of the
// real cell database, as nova-compute's periodic would, and watches the
// pool carry it into status, the gauge and one Warning; then it resets the
// counter. nova-compute may write its own stats back at any periodic, so
// the value is written again on every poll until the pool shows it.
func testFailedBuilds(t *testing.T, e *testenv.Environment) {
	db := openCellDB(t)
	setThreshold(t, e, ptr.To[int32](3))
	defer setThreshold(t, e, nil)

	waitFailedBuilds(t, e, db, nodeA1, 4)
	p, err := getPool(t.Context(), e, "pool-a")
	if err != nil {
		t.Fatal(err)
	}
	// nodeA2 runs the fake driver and never failed a build.
	if en := nodeEntry(p, nodeA2); en == nil || en.FailedBuilds == nil || *en.FailedBuilds != 0 {
		t.Errorf("node %s = %+v, want failedBuilds 0", nodeA2, en)
	}
	waitFailedBuildsGauge(t, nodeA1, 4)
	if !hasEventWithMessage(t, e, "pool-a", novav1alpha1.FailedBuildsEvent, "Node "+nodeA1+" failed 4 build(s)") {
		t.Errorf("no FailedBuilds event about %s", nodeA1)
	}

	// A successful build would reset the counter; the pool follows.
	waitFailedBuilds(t, e, db, nodeA1, 0)
	waitFailedBuildsGauge(t, nodeA1, 0)
}

// waitFailedBuildsGauge waits until host's failed-builds gauge reads want.
// The pass sets the gauge just after its status patch returns, so a test
// that has read the new status can still, for a moment, read the old gauge
// (a fresh run on two cores did).
func waitFailedBuildsGauge(t *testing.T, host string, want float64) {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("the failed-builds gauge of %s to read %v", host, want), func(context.Context) (bool, string) {
		n := gaugeValue(t, "anvil_novacompute_failed_builds", map[string]string{"pool": "pool-a", "node": host})
		return n == want, fmt.Sprintf("gauge %v", n)
	})
}

// setThreshold sets or clears pool-a's failedBuildsWarningThreshold.
func setThreshold(t *testing.T, e *testenv.Environment, threshold *int32) {
	t.Helper()
	p, err := getPool(t.Context(), e, "pool-a")
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(p.DeepCopy())
	p.Spec.FailedBuildsWarningThreshold = threshold
	if err := e.Management.Client.Patch(t.Context(), p, patch); err != nil {
		t.Fatal(err)
	}
}

// waitFailedBuilds writes count into host's stats until the pool reports it.
func waitFailedBuilds(t *testing.T, e *testenv.Environment, db *sql.DB, host string, count int32) {
	t.Helper()
	eventually(t, 2*time.Minute, fmt.Sprintf("%s failedBuilds %d in pool-a's status", host, count), func(ctx context.Context) (bool, string) {
		if err := setFailedBuilds(ctx, db, host, count); err != nil {
			return false, err.Error()
		}
		p, err := getPool(ctx, e, "pool-a")
		if err != nil {
			return false, err.Error()
		}
		en := nodeEntry(p, host)
		if en == nil {
			return false, "no entry"
		}
		return en.FailedBuilds != nil && *en.FailedBuilds == count, fmt.Sprintf("failedBuilds %v", ptr.Deref(en.FailedBuilds, -1))
	})
}

// setFailedBuilds sets the counter in host's compute_nodes row, keeping the
// other stats, as a string the way Nova writes it.
func setFailedBuilds(ctx context.Context, db *sql.DB, host string, count int32) error {
	// An unchanged row affects none, which is fine: the pool's Ready
	// already proved the row exists.
	_, err := db.ExecContext(ctx,
		"UPDATE compute_nodes SET stats = JSON_SET(COALESCE(NULLIF(stats, ''), '{}'), '$.failed_builds', ?) WHERE host = ? AND deleted = 0",
		strconv.Itoa(int(count)), host)
	return err
}

// openCellDB connects to the service set's cell database as its nova user.
func openCellDB(t *testing.T) *sql.DB {
	t.Helper()
	local := cloud.Local()
	password, err := local.DatabasePassword("nova")
	if err != nil {
		t.Fatal(err)
	}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.DBName, cfg.User, cfg.Passwd = "tcp", "127.0.0.1:"+local.Endpoints[localcloud.MariaDBPort], "nova", "nova", password
	cfg.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal("configuring the cell database client failed")
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
