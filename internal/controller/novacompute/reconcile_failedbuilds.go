package novacompute

import (
	"context"
	"strconv"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novadb"
)

// failedBuildsTimeout bounds one read of the cell database, dial included:
// a diagnostic must not hold a pass up.
const failedBuildsTimeout = 10 * time.Second

// CellDB is the part of the cell database a pool reads.
type CellDB interface {
	// FailedBuilds returns the failed_builds counter by host, and a
	// warning for each row whose stats could not be read.
	FailedBuilds(ctx context.Context) (map[string]int32, []string, error)
	// Close releases the connection.
	Close() error
}

// CellDBFactory opens the cell database of one pass.
type CellDBFactory func(cfg novadb.Config) (CellDB, error)

// OpenCellDB is the CellDBFactory of production: a MySQL connection.
func OpenCellDB(cfg novadb.Config) (CellDB, error) {
	db, err := novadb.Open(cfg)
	if err != nil {
		return nil, err
	}
	return db, nil
}

// reconcileFailedBuilds copies each node's failed_builds counter from the
// cell database into status and warns about a node whose counter rose to
// the pool's threshold. The counter is in no API (see
// docs/design/failed-builds.md), so the pool reads the database with the
// Nova's cell credentials. It is a diagnostic: when the database cannot be
// read the pool keeps the last values, logs at debug level and goes on,
// and no condition changes.
func (r *Reconciler) reconcileFailedBuilds(ctx context.Context, p *pass) (flow.Outcome, error) {
	counts, err := r.readFailedBuilds(ctx, p)
	if err != nil {
		// The error names the Secret or the driver's message with the
		// password cut out; it never carries a value.
		ctrl.LoggerFrom(ctx).V(1).Info("the failed_builds counters were not read; keeping the last values", "error", err.Error())
		return flow.Continue, nil
	}
	threshold := p.pool.Spec.FailedBuildsWarningThreshold
	for _, rise := range ApplyFailedBuilds(p.pool.Status.Nodes, counts, threshold) {
		r.event(p.pool, nodeRef(rise.Node), true, novav1alpha1.FailedBuildsEvent, "ReadFailedBuilds",
			"Node %s failed %d build(s) since its last successful one, at or above the threshold of %d; "+
				"anvil diagnose failed-builds shows every host, and disabling its compute service keeps builds away",
			rise.Node, rise.Count, *threshold)
	}
	return flow.Continue, nil
}

// readFailedBuilds reads the counters from the Nova's cell database. The
// pools of one Nova that pass at once share one read (listingShare).
func (r *Reconciler) readFailedBuilds(ctx context.Context, p *pass) (map[string]int32, error) {
	cfg, err := novadb.ConfigForNova(ctx, p.novaCluster.Reader, p.nova)
	if err != nil {
		return nil, err
	}
	return r.listings.failedBuilds.get(ctx, failedBuildsKey(p.nova, cfg), p.started, func(ctx context.Context) (map[string]int32, error) {
		return r.queryFailedBuilds(ctx, cfg)
	})
}

// failedBuildsKey names a shared read of the counters: the Nova, and the
// cell database's address, name and user. It carries no secret.
func failedBuildsKey(nova *novav1alpha1.Nova, cfg novadb.Config) string {
	return nova.Namespace + "/" + nova.Name + "\x00" + cfg.Host + "\x00" + strconv.Itoa(int(cfg.Port)) + "\x00" + cfg.Database + "\x00" + cfg.Username
}

// queryFailedBuilds opens the cell database and reads the counters.
func (r *Reconciler) queryFailedBuilds(ctx context.Context, cfg novadb.Config) (map[string]int32, error) {
	open := r.CellDB
	if open == nil {
		open = OpenCellDB
	}
	db, err := open(cfg)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, failedBuildsTimeout)
	defer cancel()
	counts, warnings, err := db.FailedBuilds(ctx)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		ctrl.LoggerFrom(ctx).V(1).Info("a compute_nodes row has unreadable stats; its counter reads 0", "row", w)
	}
	return counts, nil
}
