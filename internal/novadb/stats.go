package novadb

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// FailedBuildsKey is the key of compute_nodes.stats that nova-compute
// counts failed and rescheduled builds under.
const FailedBuildsKey = "failed_builds"

// ParseFailedBuilds reads the failed_builds counter from the stats column
// of a compute_nodes row. Nova writes the column as a JSON object of string
// values, {"failed_builds": "3", ...}; a number is taken too. An empty
// column, or one without the key, is a host that has not failed a build
// since its nova-compute started, and reads 0. A value that is no
// non-negative integer is an error, and reads 0 as well.
func ParseFailedBuilds(stats string) (int32, error) {
	if strings.TrimSpace(stats) == "" {
		return 0, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stats), &m); err != nil {
		// The column holds no credential, but its text is not quoted
		// either: the caller only needs to know it is unreadable.
		return 0, fmt.Errorf("stats is not a JSON object")
	}
	raw, ok := m[FailedBuildsKey]
	if !ok {
		return 0, nil
	}
	var text string
	if err := json.Unmarshal(raw, &text); err != nil {
		// Not a string: take a bare JSON number as its digits.
		text = string(raw)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text), 10, 32)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("stats %s is %q, not a non-negative integer", FailedBuildsKey, text)
	}
	return int32(n), nil
}
