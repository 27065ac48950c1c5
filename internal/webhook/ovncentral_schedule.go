package webhook

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The CronJob controller parses schedules with a cron library this module
// does not depend on. parseSchedule accepts a strict subset of what that
// library accepts, so that every schedule admitted here is one the CronJob
// takes: the five standard fields, and the fixed descriptors. It refuses
// @every, which is not cron, and a TZ= prefix, which the CronJob API
// refuses in favour of its timeZone field.

// cronField is one of the five fields: its name, its bounds, the names it
// accepts for values, and whether it accepts "?" for "any".
type cronField struct {
	name     string
	lo, hi   int
	names    map[string]int
	question bool
}

var (
	cronMonths = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6,
		"jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
	cronWeekdays = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

	cronFields = [5]cronField{
		{name: "minute", lo: 0, hi: 59},
		{name: "hour", lo: 0, hi: 23},
		{name: "day of month", lo: 1, hi: 31, question: true},
		{name: "month", lo: 1, hi: 12, names: cronMonths},
		{name: "day of week", lo: 0, hi: 6, names: cronWeekdays, question: true},
	}

	// cronDescriptors each stand for a five-field schedule.
	cronDescriptors = map[string]bool{"@yearly": true, "@annually": true, "@monthly": true,
		"@weekly": true, "@daily": true, "@midnight": true, "@hourly": true}
)

// parseSchedule returns why s is not a schedule of five cron fields or a
// fixed descriptor, or nil when it is. Fields are separated by spaces or
// tabs; each is a comma-separated list of *, a value or a range a-b, each
// optionally followed by /step.
func parseSchedule(s string) error {
	if strings.ContainsAny(s, "\n\r") {
		return errors.New("it must be a single line")
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return errors.New("it is empty")
	}
	if strings.HasPrefix(fields[0], "TZ=") || strings.HasPrefix(fields[0], "CRON_TZ=") {
		return errors.New("it must not name a time zone: the CronJob runs in the controller-manager's time zone")
	}
	if strings.HasPrefix(fields[0], "@") {
		if len(fields) != 1 || !cronDescriptors[fields[0]] {
			return fmt.Errorf("%q is not one of @yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly", s)
		}
		return nil
	}
	if len(fields) != len(cronFields) {
		return fmt.Errorf("it has %d fields, want 5: minute hour day-of-month month day-of-week", len(fields))
	}
	for i, f := range fields {
		if err := cronFields[i].parse(f); err != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
	}
	return nil
}

// parse checks one field: a comma-separated list of items.
func (c cronField) parse(field string) error {
	for item := range strings.SplitSeq(field, ",") {
		if err := c.parseItem(item); err != nil {
			return err
		}
	}
	return nil
}

// parseItem checks one item: *, ?, a value or a range, then an optional
// /step. A value with a step, such as 5/15, runs from the value to the
// field's end, as the CronJob controller reads it.
func (c cronField) parseItem(item string) error {
	base, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		n, ok := cronNumber(step)
		if !ok || n < 1 {
			return fmt.Errorf("step %q must be a positive number", step)
		}
	}
	switch base {
	case "*":
		return nil
	case "?":
		if !c.question {
			return errors.New("? is allowed only in day of month and day of week")
		}
		return nil
	}
	from, to, isRange := strings.Cut(base, "-")
	lo, err := c.value(from)
	if err != nil || !isRange {
		return err
	}
	hi, err := c.value(to)
	if err != nil {
		return err
	}
	if lo > hi {
		return fmt.Errorf("range %s starts after it ends", base)
	}
	return nil
}

// value reads one value: a number within the field's bounds, or a name
// the field accepts, in any case.
func (c cronField) value(s string) (int, error) {
	if n, ok := c.names[strings.ToLower(s)]; ok {
		return n, nil
	}
	n, ok := cronNumber(s)
	if !ok {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if n < c.lo || n > c.hi {
		return 0, fmt.Errorf("%d is outside %d-%d", n, c.lo, c.hi)
	}
	return n, nil
}

// cronNumber reads a decimal number of digits only: no sign, no spaces,
// and no more than a field can need, so that it cannot overflow.
func cronNumber(s string) (int, bool) {
	if s == "" || len(s) > 4 || strings.Trim(s, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}
