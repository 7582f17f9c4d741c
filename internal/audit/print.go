package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Print writes the report in format: "table" (default), "json" or "yaml".
func Print(w io.Writer, report Report, format string) error {
	switch format {
	case "", "table":
		return printTable(w, report)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(report)
	case "yaml":
		out, err := yaml.Marshal(report)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	}
	return fmt.Errorf("unknown output format %q: use table, json or yaml", format)
}

// printTable prints one row per install, then one row per rotation.
func printTable(w io.Writer, report Report) error {
	now := report.GeneratedAt.Time
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tINSTALL\tPHASE\tCRDS\tCA EXPIRES\tSERVING EXPIRES\tNEXT ROTATION\tLAST ROTATION\tFAILED\tCONTESTED")
	for _, in := range report.Installs {
		var crds []string
		for _, c := range in.CRDs {
			crds = append(crds, c.Name+"="+c.State)
		}
		caExpiry, servingExpiry := earliest(in.Services)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", in.Namespace, in.Name, dash(in.Phase), dash(strings.Join(crds, ",")),
			expiresIn(caExpiry, now), expiresIn(servingExpiry, now), expiresIn(in.NextRotation, now), lastRotation(in.LastRotation),
			in.FailedRotations, dash(strings.Join(in.Contested, ",")))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	period := "kept in status and Events"
	if report.Since != nil {
		period = "since " + report.Since.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "\nROTATIONS (%s, oldest first)\n", period)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STARTED\tNAMESPACE\tINSTALL\tSERVICE\tKIND\tREASON\tOUTCOME\tCOMPLETED\tOLD\tNEW\tSOURCE")
	for _, r := range report.Rotations {
		completed := "-"
		if r.Completed != nil {
			completed = r.Completed.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Started.UTC().Format(time.RFC3339), r.Namespace, r.Install, r.Service,
			r.Kind, dash(r.Reason), r.Outcome, completed, dash(r.OldFingerprint), r.NewFingerprint, r.Source)
	}
	return tw.Flush()
}

// earliest returns the soonest CA and serving expiry among services.
func earliest(services []Service) (ca, serving *metav1.Time) {
	for _, s := range services {
		if s.CANotAfter != nil && (ca == nil || s.CANotAfter.Before(ca)) {
			ca = s.CANotAfter
		}
		if s.ServingNotAfter != nil && (serving == nil || s.ServingNotAfter.Before(serving)) {
			serving = s.ServingNotAfter
		}
	}
	return ca, serving
}

func lastRotation(r *Rotation) string {
	if r == nil {
		return "-"
	}
	return fmt.Sprintf("%s %s %s (%s)", r.Kind, r.Outcome, r.Started.UTC().Format(time.RFC3339), dash(r.Reason))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
