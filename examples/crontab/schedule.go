package crontab

import (
	"fmt"
	"strconv"
	"strings"
)

// The schedule syntax the validating webhook accepts is that of a
// Kubernetes CronJob's five-field schedule (which Kubernetes parses with
// robfig/cron's standard parser), without the @descriptors and the TZ=
// prefix: those are not five fields, so v2 could not hold them. Per field,
// a comma-separated list of items, each one of
//
//	*  or  ?            every value
//	5                   one value (month and day of week also take names: JAN, MON)
//	1-5                 a range, inclusive
//	*/15  1-30/10  5/15 a step over every value, over a range, or from a value to the maximum
//
// Day of week is 0-6, 0 being Sunday (as for a CronJob: 7 is refused).

// ScheduleExample is a valid cronSpec, quoted in every refusal.
const ScheduleExample = "30 2 * * 1-5"

// ScheduleExampleMeaning says what ScheduleExample means.
const ScheduleExampleMeaning = "02:30 Monday to Friday"

// scheduleField is one of the five fields: its v1 wording, its v2 name,
// bounds and names.
type scheduleField struct {
	name     string // as a person says it: "day of month"
	v2Name   string // the v2 spec field: "dayOfMonth"
	min, max int
	names    []string // names[i] stands for min+i; nil: numbers only
	example  string   // a valid value, for messages
}

var scheduleFields = [5]scheduleField{
	{name: "minute", v2Name: "minute", min: 0, max: 59, example: "30"},
	{name: "hour", v2Name: "hour", min: 0, max: 23, example: "2"},
	{name: "day of month", v2Name: "dayOfMonth", min: 1, max: 31, example: "1"},
	{name: "month", v2Name: "month", min: 1, max: 12, example: "JAN-JUN",
		names: []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}},
	{name: "day of week", v2Name: "dayOfWeek", min: 0, max: 6, example: "1-5",
		names: []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}},
}

// descriptors are the @-shorthands of cron with their five-field spelling,
// so a refusal can say what to write instead.
var descriptors = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

// ValidateCronSpec checks a v1 cronSpec: five whitespace-separated fields
// (the converter splits it the same way), each valid for its position.
// The error says what is wrong; callers add an example of a valid value.
func ValidateCronSpec(spec string) error {
	parts := strings.Fields(spec)
	switch {
	case len(parts) == 0:
		return fmt.Errorf("the schedule is empty; it needs five fields: minute hour day-of-month month day-of-week")
	case len(parts) == 1 && strings.HasPrefix(parts[0], "@"):
		if five, ok := descriptors[strings.ToLower(parts[0])]; ok {
			return fmt.Errorf("descriptors such as %s are not supported (v2 stores five fields); write %q instead", parts[0], five)
		}
		return fmt.Errorf("%s is not a schedule; it needs five fields: minute hour day-of-month month day-of-week", parts[0])
	case strings.HasPrefix(parts[0], "TZ=") || strings.HasPrefix(parts[0], "CRON_TZ="):
		return fmt.Errorf("a time zone prefix (%s) is not supported; give the five fields only", parts[0])
	case len(parts) != len(scheduleFields):
		return fmt.Errorf("has %d fields, needs five: minute hour day-of-month month day-of-week", len(parts))
	}
	for i, part := range parts {
		if err := scheduleFields[i].validate(part); err != nil {
			return fmt.Errorf("%s: %w", scheduleFields[i].name, err)
		}
	}
	return nil
}

// validate checks one field's value: a comma-separated list of items.
func (f scheduleField) validate(value string) error {
	if value == "" {
		return fmt.Errorf("is empty")
	}
	for _, item := range strings.Split(value, ",") {
		if err := f.validateItem(item); err != nil {
			if item != value {
				return fmt.Errorf("%q in list %q: %w", item, value, err)
			}
			return err
		}
	}
	return nil
}

// validateItem checks "*", "?", "a", "a-b", each optionally with "/step".
func (f scheduleField) validateItem(item string) error {
	if item == "" {
		return fmt.Errorf("has an empty list item (two commas, or a comma at an end)")
	}
	rng, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		n, err := strconv.Atoi(step)
		if err != nil || !isDigits(step) {
			return fmt.Errorf("step %q in %q is not a number", step, item)
		}
		if span := f.max - f.min + 1; n < 1 || n > span {
			return fmt.Errorf("step %d in %q is out of range 1-%d", n, item, span)
		}
	}
	if rng == "*" || rng == "?" {
		return nil
	}
	if rng == "" {
		return fmt.Errorf("%q has no value before the step; write */n for every n-th value", item)
	}
	low, high, isRange := strings.Cut(rng, "-")
	lo, err := f.value(low)
	if err != nil {
		return err
	}
	if !isRange {
		return nil
	}
	hi, err := f.value(high)
	if err != nil {
		return err
	}
	if lo > hi {
		return fmt.Errorf("range %q starts after it ends (write the smaller value first)", rng)
	}
	return nil
}

// value parses a number or, where the field has them, a name.
func (f scheduleField) value(s string) (int, error) {
	if s == "" {
		return 0, fmt.Errorf("a range is missing a value (write a-b, as in %s)", f.exampleRange())
	}
	if isDigits(s) {
		n, err := strconv.Atoi(s)
		if err != nil || n < f.min || n > f.max {
			return 0, fmt.Errorf("%s is out of range %d-%d%s", s, f.min, f.max, f.namesHint())
		}
		return n, nil
	}
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.min + i, nil
		}
	}
	return 0, fmt.Errorf("%q is not a number%s", s, f.namesHint())
}

func (f scheduleField) namesHint() string {
	switch f.v2Name {
	case "month":
		return " (or a name JAN-DEC)"
	case "dayOfWeek":
		return " (0 is Sunday; or a name SUN-SAT)"
	}
	return ""
}

func (f scheduleField) exampleRange() string {
	return fmt.Sprintf("%d-%d", f.min, f.min+1)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
