package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// MigrationPolicy says when Hookwright rewrites a conversion CRD's stored
// objects into its storage version, so that older versions can leave
// status.storedVersions (and then the CRD).
// +kubebuilder:validation:Enum=Automatic;OnRequest;Disabled
type MigrationPolicy string

const (
	// MigrationAutomatic migrates as soon as status.storedVersions holds a
	// version other than the storage version and the conversion is
	// verified. A migration never changes an object's content: each object
	// is rewritten as it is, in the storage version.
	MigrationAutomatic MigrationPolicy = "Automatic"
	// MigrationOnRequest migrates only when the install carries a new
	// value of the operators.hookwright.dev/migrate-storage annotation.
	MigrationOnRequest MigrationPolicy = "OnRequest"
	// MigrationDisabled never migrates; status says which versions are
	// stored.
	MigrationDisabled MigrationPolicy = "Disabled"
)

// StorageMigrationSpec sets when the conversion CRDs' stored objects are
// migrated to the storage version.
type StorageMigrationSpec struct {
	// Policy of every conversion CRD that CRDs does not name; unset means
	// Automatic (no API default, so a spec reads back as it was written).
	// +optional
	Policy MigrationPolicy `json:"policy,omitempty"`
	// CRDs sets the policy of single conversion CRDs.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	CRDs []CRDMigrationPolicy `json:"crds,omitempty"`
}

// CRDMigrationPolicy is the migration policy of one conversion CRD.
type CRDMigrationPolicy struct {
	// Name of a conversion CRD of this install.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Policy for this CRD.
	Policy MigrationPolicy `json:"policy"`
}

// PolicyFor is the migration policy of one conversion CRD.
func (m StorageMigrationSpec) PolicyFor(crd string) MigrationPolicy {
	for _, c := range m.CRDs {
		if c.Name == crd {
			return c.Policy
		}
	}
	if m.Policy == "" {
		return MigrationAutomatic
	}
	return m.Policy
}

// MigrationState is where a CRD's storage migration stands.
type MigrationState string

const (
	// MigrationWaiting: versions other than the storage version are
	// stored, and the migration waits (for a verified conversion, a
	// request, or RBAC); the message says for what.
	MigrationWaiting MigrationState = "Waiting"
	// MigrationRunning: objects are being rewritten.
	MigrationRunning MigrationState = "Running"
	// MigrationSucceeded: every object is stored in the storage version
	// and status.storedVersions lists only it.
	MigrationSucceeded MigrationState = "Succeeded"
	// MigrationFailed: the migration stopped; storedVersions is untouched.
	// It resumes where it stopped once the cause is fixed (tried again
	// every minute, and on every change of the install or the CRD).
	MigrationFailed MigrationState = "Failed"
	// MigrationNotRequested: the policy is Disabled, or OnRequest with no
	// new request.
	MigrationNotRequested MigrationState = "NotRequested"
)

// Methods a migration runs by.
const (
	// MethodHookwright: Hookwright's own migrator rewrites every object
	// (paginated lists, a no-op server-side apply per object with its
	// uid and resourceVersion as preconditions).
	MethodHookwright = "Hookwright"
	// MethodStorageVersionMigration: the cluster's own
	// storagemigration.k8s.io StorageVersionMigration, run by
	// kube-controller-manager; Hookwright then prunes storedVersions.
	MethodStorageVersionMigration = "StorageVersionMigration"
)

// StorageMigrationStatus is the last storage migration of one conversion
// CRD: its audit record and, while it runs, the point to resume from.
type StorageMigrationStatus struct {
	// Name of the CRD.
	Name string `json:"name"`
	// State of the migration.
	State MigrationState `json:"state"`
	// Method is Hookwright or StorageVersionMigration.
	// +optional
	Method string `json:"method,omitempty"`
	// From are the versions being migrated away from (stored versions
	// other than the storage version when the migration started).
	// +optional
	From []string `json:"from,omitempty"`
	// To is the storage version objects are rewritten in.
	// +optional
	To string `json:"to,omitempty"`
	// Request is the migrate-storage annotation value this migration
	// carries out (OnRequest), or "" for an automatic one.
	// +optional
	Request string `json:"request,omitempty"`
	// StartedAt is when the migration started.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// CompletedAt is when it succeeded.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`
	// FailedAt is when it last failed, or RBAC stopped it; it is tried
	// again a minute (RBAC: 30 s) later, or at once when the install changes.
	// +optional
	FailedAt *metav1.Time `json:"failedAt,omitempty"`
	// Migrated counts objects rewritten, or found rewritten or deleted by
	// someone else since the list (a conflict), so far.
	// +optional
	Migrated int64 `json:"migrated,omitempty"`
	// Total is the number of objects to migrate, as the API server
	// estimated it when the listing began (objects created later are
	// written in the storage version already).
	// +optional
	Total int64 `json:"total,omitempty"`
	// Continue is where the listing resumes (the API server's continue
	// token of the last page done); "" before the first page and after
	// the last.
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	Continue string `json:"continue,omitempty"`
	// Restarts counts the times the listing started over: the API server
	// had compacted away the snapshot its continue token named and offered
	// no token to go on past it, or a
	// listing that failed on an object is retried (the snapshot would
	// still hold the object as it was).
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// MigrationName is the StorageVersionMigration object driven, with
	// method StorageVersionMigration.
	// +optional
	MigrationName string `json:"migrationName,omitempty"`
	// Reason is why the migration waits or failed, a Reason constant
	// (MigrationWaiting, MigrationForbidden, MigrationNotRequested,
	// MigrationFailed); "" while it runs or once it succeeded.
	// +optional
	Reason string `json:"reason,omitempty"`
	// Message explains the state; for a failure it names the object and
	// the API server's error.
	// +optional
	Message string `json:"message,omitempty"`
}
