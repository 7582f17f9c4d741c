// Package crontab is the conversion webhook of the CronTab example from the
// CRD conversion KEP: stable.example.com/v1 stores a cron schedule as one
// string (spec.cronSpec), v2 splits it into five fields (spec.minute,
// hour, dayOfMonth, month, dayOfWeek). It is written with Hookwright's kit
// (pkg/conversion) and installed by Hookwright (webhookinstall.yaml).
package crontab
