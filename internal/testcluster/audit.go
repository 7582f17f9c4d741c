package testcluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// UserConfig returns a rest.Config for a new user of the cluster, so a
// process under test has an identity of its own in the audit log.
func (c *Cluster) UserConfig(name string, groups ...string) (*rest.Config, error) {
	user, err := c.env.ControlPlane.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("adding user %s: %w", name, err)
	}
	return user.Config(), nil
}

// AuditEvent is the part of an audit.k8s.io/v1 Event that tests count.
type AuditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	// Received and Completed are when the API server received the request
	// and when it finished this stage.
	Received  time.Time `json:"requestReceivedTimestamp"`
	Completed time.Time `json:"stageTimestamp"`
	// Annotations are the audit annotations, among them the authorizer's
	// decision (AnnotationAuthorizationDecision).
	Annotations map[string]string `json:"annotations,omitempty"`
}

// AnnotationAuthorizationDecision is the audit annotation in which the API
// server records the authorizer's decision, "allow" or "forbid": a 403
// after "allow" is an admission webhook's or policy's refusal, not RBAC's.
const AnnotationAuthorizationDecision = "authorization.k8s.io/decision"

// IsWrite reports whether the request could change stored state (dry runs
// included: the server still did the work).
func (e AuditEvent) IsWrite() bool {
	switch e.Verb {
	case "create", "update", "patch", "delete", "deletecollection":
		return true
	}
	return false
}

// AuditEvents reads the audit log (Options.AuditLog) from byte offset on,
// keeping one event per request (stage ResponseComplete; for a watch,
// ResponseStarted, since a watch completes only when it closes), and
// returns them with the offset to continue from.
func (c *Cluster) AuditEvents(offset int64) ([]AuditEvent, int64, error) {
	if c.AuditLogPath == "" {
		return nil, 0, errors.New("the cluster was started without Options.AuditLog")
	}
	f, err := os.Open(c.AuditLogPath)
	if err != nil {
		return nil, 0, err
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, 0, err
	}
	var events []AuditEvent
	reader := bufio.NewReader(f)
	for {
		line, err := reader.ReadBytes('\n')
		if len(line) == 0 || line[len(line)-1] != '\n' {
			break // a partial last line is read next time
		}
		offset += int64(len(line))
		var e AuditEvent
		if json.Unmarshal(line, &e) == nil && e.Stage == onePerRequest(e.Verb) {
			events = append(events, e)
		}
		if err != nil {
			break
		}
	}
	return events, offset, nil
}

func onePerRequest(verb string) string {
	if verb == "watch" {
		return "ResponseStarted"
	}
	return "ResponseComplete"
}
