// Package crontab is the webhook of the CronTab example from the CRD
// conversion KEP: stable.example.com/v1 stores a cron schedule as one
// string (spec.cronSpec), v2 splits it into five fields (spec.minute,
// hour, dayOfMonth, month, dayOfWeek). One binary (cmd/crontab-webhook)
// serves three webhooks on one port with one certificate, all installed by
// Hookwright from one WebhookInstall (webhookinstall.yaml):
//
//   - conversion between v1 and v2 (Converter), written with Hookwright's
//     kit, pkg/conversion;
//   - validation (Validator): a schedule must be valid cron syntax, with a
//     message saying what is wrong and giving a valid value;
//   - defaulting (Defaulter): spec.image defaults to DefaultImage.
//
// The two admission webhooks use controller-runtime's webhook/admission
// package; NewHandler puts all three on their paths.
package crontab
