package novaconfig

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// KeyManageConfig is the key of {nova}-manage-config: the nova.conf
// fragment nova-manage reads to reach the API and cell databases.
const KeyManageConfig = "nova-manage.conf"

// Database is one MySQL or MariaDB database nova-manage connects to.
type Database struct {
	// Host is the server's host name or IP address; an IPv6 address is
	// bracketed in the URL.
	Host string
	// Port is the server's port, 1 to 65535.
	Port int32
	// Database is the schema's name.
	Database string
	// Username and Password are the credentials; they are URL-escaped into
	// the connection URL.
	Username, Password string
}

// ManageInput is everything nova-manage.conf is made of.
type ManageInput struct {
	// APIDatabase is [api_database], Nova's API database (nova_api).
	APIDatabase Database
	// Database is [database], the cell's database (nova).
	Database Database
}

// RenderManageConfig returns nova-manage.conf: [api_database] and
// [database], each with a mysql+pymysql connection URL. A control character
// in any input is refused by section, and every other error names the
// input field, so no error ever carries a credential.
func RenderManageConfig(in ManageInput) ([]byte, error) {
	dbs := []struct {
		section, input string
		db             Database
	}{
		{"api_database", "ManageInput.APIDatabase", in.APIDatabase},
		{"database", "ManageInput.Database", in.Database},
	}
	var file File
	// The raw values are checked, not the URL: escaping would turn a
	// newline into %0A and hide it, but a credential with a control
	// character is a broken hand-over the user should hear about.
	var raw []Section
	for _, d := range dbs {
		if err := checkDatabase(d.input, d.db); err != nil {
			return nil, err
		}
		file.Sections = append(file.Sections, Section{d.section, []Option{{"connection", connectionURL(d.db)}}})
		raw = append(raw, Section{d.section, []Option{
			{"host", d.db.Host}, {"database", d.db.Database}, {"username", d.db.Username}, {"password", d.db.Password},
		}})
	}
	if name, ok := firstUnsafeSection(raw); ok {
		return nil, &UnsafeValueError{Section: name}
	}
	return file.Render()
}

// checkDatabase names the first empty or out-of-range field of db.
func checkDatabase(input string, db Database) error {
	for _, f := range []struct{ name, value string }{
		{"Host", db.Host}, {"Database", db.Database}, {"Username", db.Username}, {"Password", db.Password},
	} {
		if f.value == "" {
			return fmt.Errorf("manage config input %s.%s is empty", input, f.name)
		}
	}
	if db.Port < 1 || db.Port > 65535 {
		return fmt.Errorf("manage config input %s.Port is %d, not in 1-65535", input, db.Port)
	}
	return nil
}

// connectionURL renders the SQLAlchemy URL of db. The user and password are
// escaped the way net/url escapes userinfo, which SQLAlchemy unquotes; a
// '$' is escaped too, because oslo.config would read it as the start of a
// variable reference and substitute it away.
func connectionURL(db Database) string {
	u := url.URL{
		Scheme:   "mysql+pymysql",
		User:     url.UserPassword(db.Username, db.Password),
		Host:     net.JoinHostPort(db.Host, strconv.Itoa(int(db.Port))),
		Path:     "/" + db.Database,
		RawQuery: "charset=utf8mb4",
	}
	// Every '$' left in the URL is one the input carried: the escapes
	// net/url writes are '%' and hex digits only.
	return strings.ReplaceAll(u.String(), "$", "%24")
}
