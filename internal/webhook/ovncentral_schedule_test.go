package webhook

import (
	"strings"
	"testing"
)

func TestParseSchedule(t *testing.T) {
	valid := []string{
		"0 2 * * *",
		"*/15 * * * *",
		"0 0-23/2 * * *",
		"5,35 3 1,15 * ?",
		"0 4 ? JAN-jun MON-fri",
		"0 4 * * sun",
		"59 23 31 12 6",
		"5/10 * * * *",
		"  0\t2 * * *  ",
		"@daily",
		"@hourly",
	}
	for _, s := range valid {
		if err := parseSchedule(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}

	invalid := []struct{ schedule, want string }{
		{"", "it is empty"},
		{"0 2 * *", "it has 4 fields, want 5"},
		{"0 2 * * * *", "it has 6 fields, want 5"},
		{"60 2 * * *", `minute field "60": 60 is outside 0-59`},
		{"0 24 * * *", `hour field "24": 24 is outside 0-23`},
		{"0 2 0 * *", `day of month field "0": 0 is outside 1-31`},
		{"0 2 * 13 *", `month field "13": 13 is outside 1-12`},
		{"0 2 * * 7", `day of week field "7": 7 is outside 0-6`},
		{"0 2 * * funday", `"funday" is not a number`},
		{"0 2 * * -1", `"" is not a number`},
		{"+5 2 * * *", `"+5" is not a number`},
		{"0 2 * MON *", `"MON" is not a number`},
		{"? 2 * * *", "? is allowed only in day of month and day of week"},
		{"*/0 2 * * *", `step "0" must be a positive number`},
		{"*/ 2 * * *", `step "" must be a positive number`},
		{"0 10-2 * * *", "range 10-2 starts after it ends"},
		{"0 2,,3 * * *", `"" is not a number`},
		{"0 2 * * *\n0 3 * * *", "it must be a single line"},
		{"TZ=UTC 0 2 * * *", "it must not name a time zone"},
		{"CRON_TZ=Europe/Berlin 0 2 * * *", "it must not name a time zone"},
		{"@every 1h", "is not one of @yearly"},
		{"@daily 0", "is not one of @yearly"},
		{"@fortnightly", "is not one of @yearly"},
	}
	for _, tt := range invalid {
		err := parseSchedule(tt.schedule)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: got %v, want an error with %q", tt.schedule, err, tt.want)
		}
	}
}
