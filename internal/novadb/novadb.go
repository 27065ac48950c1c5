// Package novadb reads what Nova keeps only in a cell database and in no
// API: the per-host failed_builds counter of compute_nodes.stats, and the
// compute services' disabled flag next to it. It opens read-only queries
// with the cell's own credentials and never writes.
//
// No error of this package carries the password: the driver is built from
// a structured configuration, never from a DSN string, its own logger is
// silenced, and every error text is scrubbed of the password before it
// leaves the package.
package novadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// DefaultTimeout bounds the dial and every read of one query, so that an
// unreachable database costs a pass seconds, not minutes.
const DefaultTimeout = 5 * time.Second

// Config is where a cell database is and who reads it.
type Config struct {
	// Host is the server's host name or IP address.
	Host string
	// Port is the server's port.
	Port int32
	// Database is the cell's schema, such as "nova".
	Database string
	// Username and Password are the cell's credentials.
	Username, Password string
	// Timeout bounds the dial and each read; zero means DefaultTimeout.
	Timeout time.Duration
}

// Service is the compute service of one host, as the services table has it.
type Service struct {
	// Disabled is true while the service takes no new builds.
	Disabled bool
	// DisabledReason is the reason an operator gave, or "".
	DisabledReason string
}

// DB is an open cell database. It holds at most one connection.
type DB struct {
	db       *sql.DB
	password string
}

// Open prepares a connection to the cell database. It dials nothing: the
// first query does, within cfg.Timeout.
func Open(cfg Config) (*DB, error) {
	if cfg.Host == "" || cfg.Database == "" || cfg.Username == "" {
		return nil, errors.New("cell database: host, database and username are required")
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	mc := mysql.NewConfig()
	mc.Net = "tcp"
	mc.Addr = net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port)))
	mc.DBName = cfg.Database
	mc.User = cfg.Username
	mc.Passwd = cfg.Password
	mc.Timeout, mc.ReadTimeout, mc.WriteTimeout = timeout, timeout, timeout
	// The driver prints connection troubles to stderr on its own; the
	// caller reports what matters, at the level it chooses.
	mc.Logger = &mysql.NopLogger{}
	conn, err := mysql.NewConnector(mc)
	if err != nil {
		return nil, scrub("cell database: configuring the driver", err, cfg.Password)
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	return &DB{db: db, password: cfg.Password}, nil
}

// Close closes the connection.
func (d *DB) Close() error { return d.db.Close() }

// FailedBuilds returns each compute host's failed_builds counter, read from
// the stats of its live compute_nodes rows. A host with several rows (one
// per hypervisor node, as Ironic has) sums them. A row whose stats cannot
// be read counts 0 and is named in the returned warnings.
func (d *DB) FailedBuilds(ctx context.Context) (map[string]int32, []string, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT host, stats FROM compute_nodes WHERE deleted = 0")
	if err != nil {
		return nil, nil, scrub("cell database: reading compute_nodes", err, d.password)
	}
	defer rows.Close()
	out := map[string]int32{}
	var warnings []string
	for rows.Next() {
		var host, stats sql.NullString
		if err := rows.Scan(&host, &stats); err != nil {
			return nil, nil, scrub("cell database: reading compute_nodes", err, d.password)
		}
		if !host.Valid || host.String == "" {
			continue
		}
		n, err := ParseFailedBuilds(stats.String)
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("host %s: %v", host.String, err))
		}
		out[host.String] = addSaturating(out[host.String], n)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, scrub("cell database: reading compute_nodes", err, d.password)
	}
	return out, warnings, nil
}

// ComputeServices returns the live nova-compute services by host.
func (d *DB) ComputeServices(ctx context.Context) (map[string]Service, error) {
	rows, err := d.db.QueryContext(ctx,
		"SELECT host, disabled, disabled_reason FROM services WHERE deleted = 0 AND `binary` = 'nova-compute'")
	if err != nil {
		return nil, scrub("cell database: reading services", err, d.password)
	}
	defer rows.Close()
	out := map[string]Service{}
	for rows.Next() {
		var (
			host, reason sql.NullString
			disabled     sql.NullBool
		)
		if err := rows.Scan(&host, &disabled, &reason); err != nil {
			return nil, scrub("cell database: reading services", err, d.password)
		}
		if host.Valid {
			out[host.String] = Service{Disabled: disabled.Bool, DisabledReason: reason.String}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, scrub("cell database: reading services", err, d.password)
	}
	return out, nil
}

// addSaturating adds a counter to a total without wrapping past the int32
// range. Both are non-negative: ParseFailedBuilds returns no negative.
func addSaturating(total, n int32) int32 {
	if total > math.MaxInt32-n {
		return math.MaxInt32
	}
	return total + n
}

// Error is a failed read of the cell database. Its text names the
// operation and the driver's message with the password cut out.
type Error struct {
	// Op is what was attempted, such as "cell database: reading services".
	Op  string
	msg string
	// cause is kept only for errors.Is on a context's end.
	cause error
}

func (e *Error) Error() string { return e.Op + ": " + e.msg }

// Unwrap exposes a context cancellation or deadline, nothing else.
func (e *Error) Unwrap() error { return e.cause }

// scrub wraps err for op, with every occurrence of password replaced. The
// driver's messages name the user and the address but not the password;
// the replacement is the second line of defence.
func scrub(op string, err error, password string) error {
	msg := err.Error()
	if password != "" {
		msg = strings.ReplaceAll(msg, password, "[redacted]")
	}
	out := &Error{Op: op, msg: msg}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		out.cause = context.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		out.cause = context.Canceled
	}
	return out
}
