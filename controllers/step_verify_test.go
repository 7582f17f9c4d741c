package controllers

import (
	"errors"
	"testing"
)

// The messages are the API server's (apiextensions-apiserver
// webhook_converter.go), as a LIST at a converted version returns them.
func TestWebhookAnswered(t *testing.T) {
	tests := []struct {
		name string
		err  string
		want bool
	}{
		{"the webhook refused an object, with its message",
			`conversion webhook for stable.example.com/v1, Kind=CronTab failed: converting default/broken-schedule (uid 1) from v1 to v2: cronSpec "* *" has 2 fields, want 5`, true},
		{"the webhook refused without a message",
			`conversion webhook for stable.example.com/v1, Kind=CronTab failed: response.result.status was 'Failure', not 'Success'`, true},
		{"the webhook changed metadata it may not",
			`conversion webhook for stable.example.com/v1, Kind=CronTab returned invalid metadata in object at index 0: must not change name`, true},
		{"the caBundle does not trust the serving certificate",
			`conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "https://crontab-webhook-service.crontab-system.svc:443/convert?timeout=30s": tls: failed to verify certificate: x509: certificate signed by unknown authority`, false},
		{"no pod serves",
			`conversion webhook for stable.example.com/v1, Kind=CronTab failed: Post "https://crontab-webhook-service.crontab-system.svc:443/convert?timeout=30s": dial tcp 10.0.0.1:443: connect: connection refused`, false},
		{"not a conversion error at all", `widgets.example.com "w" is forbidden`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := webhookAnswered(errors.New(tt.err)); got != tt.want {
				t.Errorf("webhookAnswered = %v, want %v", got, tt.want)
			}
		})
	}
}
