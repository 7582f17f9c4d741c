package crontab_test

import (
	"strings"
	"testing"

	"github.com/hookwright/hookwright/examples/crontab"
)

func TestValidateCronSpecAccepts(t *testing.T) {
	for _, spec := range []string{
		crontab.ScheduleExample,
		"* * * * *",
		"? ? ? ? ?",
		"*/5 * * * 1-5",
		"30  2 *\t* *", // extra blanks: the converter keeps the exact spelling
		"0 0 1 1 *",
		"59 23 31 12 6",
		"0 9-17/2 * * MON-FRI",
		"0,15,30,45 * * * *",
		"5/15 * * * *",
		"0 0 1,15 jan,Jul sun",
		"0 0 * FEB-DEC/2 *",
		"1-1 0-0 1-1 1-1 0-0",
		"*/60 */24 */31 */12 */7",
	} {
		if err := crontab.ValidateCronSpec(spec); err != nil {
			t.Errorf("ValidateCronSpec(%q) = %v, want nil", spec, err)
		}
	}
}

func TestValidateCronSpecRefusesSayingWhy(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want string // a substring of the error
	}{
		{"", "the schedule is empty; it needs five fields"},
		{"   ", "the schedule is empty"},
		{"* *", "has 2 fields, needs five: minute hour day-of-month month day-of-week"},
		{"* * * * * *", "has 6 fields, needs five"}, // seconds are not supported
		{"@daily", `descriptors such as @daily are not supported (v2 stores five fields); write "0 0 * * *" instead`},
		{"@HOURLY", `write "0 * * * *" instead`},
		{"@every 5m", "has 2 fields"},
		{"@sometimes", "@sometimes is not a schedule"},
		{"TZ=UTC 0 0 * * *", "a time zone prefix (TZ=UTC) is not supported"},
		{"CRON_TZ=Europe/Paris 0 0 * * *", "a time zone prefix"},
		{"60 * * * *", "minute: 60 is out of range 0-59"},
		{"* 24 * * *", "hour: 24 is out of range 0-23"},
		{"* * 0 * *", "day of month: 0 is out of range 1-31"},
		{"* * 32 * *", "day of month: 32 is out of range 1-31"},
		{"* * * 13 *", "month: 13 is out of range 1-12 (or a name JAN-DEC)"},
		{"* * * 0 *", "month: 0 is out of range 1-12"},
		{"* * * * 7", "day of week: 7 is out of range 0-6 (0 is Sunday; or a name SUN-SAT)"},
		{"* * * * SUNDAY", `day of week: "SUNDAY" is not a number (0 is Sunday; or a name SUN-SAT)`},
		{"x * * * *", `minute: "x" is not a number`},
		{"MON * * * *", `minute: "MON" is not a number`}, // names only where they mean something
		{"-1 * * * *", "a range is missing a value"},
		{"5- * * * *", "a range is missing a value"},
		{"1-2-3 * * * *", `"2-3" is not a number`},
		{"30-10 * * * *", `range "30-10" starts after it ends`},
		{"* * * * FRI-MON", `range "FRI-MON" starts after it ends`},
		{"*/0 * * * *", `minute: step 0 in "*/0" is out of range 1-60`},
		{"*/61 * * * *", "step 61 in \"*/61\" is out of range 1-60"},
		{"* */25 * * *", "hour: step 25"},
		{"*/x * * * *", `step "x" in "*/x" is not a number`},
		{"*/-1 * * * *", `step "-1" in "*/-1" is not a number`},
		{"*/ * * * *", `step "" in "*/" is not a number`},
		{"/5 * * * *", `"/5" has no value before the step`},
		{"1/2/3 * * * *", `step "2/3"`},
		{"1,,2 * * * *", `"" in list "1,,2": has an empty list item`},
		{"1, * * * *", "has an empty list item"},
		{"1,60 * * * *", `minute: "60" in list "1,60": 60 is out of range 0-59`},
		{"+5 * * * *", `"+5" is not a number`},
		{"99999999999999999999 * * * *", "is out of range 0-59"},
	} {
		err := crontab.ValidateCronSpec(tc.spec)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ValidateCronSpec(%q) = %v, want an error containing %q", tc.spec, err, tc.want)
		}
	}
}

// Every cronSpec the validator accepts converts to v2 and back: the
// validating webhook stands in front of the converter, so it must never
// let in what the converter cannot handle.
func TestAcceptedSchedulesConvert(t *testing.T) {
	for _, spec := range []string{crontab.ScheduleExample, "30  2 *\t* *", "0 9-17/2 * * MON-FRI", "? ? ? ? ?"} {
		if err := crontab.ValidateCronSpec(spec); err != nil {
			t.Fatal(err)
		}
		v2, err := crontab.Converter().Convert(cronTab("v1", map[string]any{"cronSpec": spec}), "v2")
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		v1, err := crontab.Converter().Convert(v2, "v1")
		if err != nil {
			t.Fatalf("%q: %v", spec, err)
		}
		if got := v1.Object["spec"].(map[string]any)["cronSpec"]; got != spec {
			t.Errorf("cronSpec %q came back as %q", spec, got)
		}
	}
}
