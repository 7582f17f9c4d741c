package v1alpha1

// AnnotationRotate on a WebhookInstall asks for a manual rotation:
// "ca: <reason>" or "serving: <reason>", for example
//
//	kubectl annotate whi my-install operators.hookwright.dev/rotate="ca: suspected key leak" --overwrite
//
// Each distinct value is carried out once; status.handledRotationRequest
// records the last one handled and status.rotations the rotation itself.
const AnnotationRotate = "operators.hookwright.dev/rotate"

// AnnotationMigrateStorage on a WebhookInstall asks for a storage
// migration of its conversion CRDs whose policy is OnRequest, for example
//
//	kubectl annotate whi my-install operators.hookwright.dev/migrate-storage="retire v1" --overwrite
//
// Each distinct value is carried out once per CRD; the CRD's
// status.storageMigrations entry records it as its request.
const AnnotationMigrateStorage = "operators.hookwright.dev/migrate-storage"

// Annotations Hookwright reads and writes on CustomResourceDefinitions.
const (
	// AnnotationOwner on a CRD names the WebhookInstall (<namespace>/<name>)
	// that owns its conversion. Written with optimistic concurrency, so two
	// installs can never both claim a CRD.
	AnnotationOwner = "operators.hookwright.dev/owner"
	// AnnotationOwnerUID is the owning install's UID, so a deleted and
	// re-created install of the same name is recognised.
	AnnotationOwnerUID = "operators.hookwright.dev/owner-uid"
	// AnnotationHandover is set by an admin on a CRD whose spec.conversion
	// someone else wrote, to let the named install (<namespace>/<name>) take
	// it over: kubectl annotate crd <crd> operators.hookwright.dev/handover=<namespace>/<name>
	AnnotationHandover = "operators.hookwright.dev/handover"
	// AnnotationReleasedBy marks a CRD whose conversion Hookwright left in
	// place on deletion (setting None would have made objects unreadable or
	// mangled); any WebhookInstall may take it over without a handover.
	AnnotationReleasedBy = "operators.hookwright.dev/released-by"
)
