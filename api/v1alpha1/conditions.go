package v1alpha1

// Condition types of a WebhookInstall.
const (
	// TypeReady is True when every other condition is True.
	TypeReady = "Ready"
	// TypeCertificatesReady is True when every Service has a valid CA and serving certificate.
	TypeCertificatesReady = "CertificatesReady"
	// TypeWebhooksAvailable is True when every webhook Deployment is available.
	TypeWebhooksAvailable = "WebhooksAvailable"
	// TypeConversionConfigured is True when every conversion CRD points at its webhook.
	TypeConversionConfigured = "ConversionConfigured"
	// TypeConversionVerified is True when the API server converted through every webhook.
	TypeConversionVerified = "ConversionVerified"
	// TypeConversionContested is True when another field manager keeps
	// rewriting a CRD's conversion that Hookwright restores (a fight).
	TypeConversionContested = "ConversionContested"
	// TypeAdmissionConfigured is True when every admission webhook is
	// registered in the install's admission configurations, calling its
	// Service with the current caBundle (True too when there is none).
	TypeAdmissionConfigured = "AdmissionConfigured"
	// TypeAdmissionVerified is True when the API server called every
	// admission webhook through its configuration (True too when there is none).
	TypeAdmissionVerified = "AdmissionVerified"
	// TypeAdmissionContested is True when another field manager keeps
	// rewriting an admission webhook's clientConfig that Hookwright restores.
	TypeAdmissionContested = "AdmissionContested"
	// TypeStorageMigrated is True when every conversion CRD stores its
	// objects in its storage version only (status.storedVersions lists
	// only it). It does not count towards Ready: the webhook serves
	// either way.
	TypeStorageMigrated = "StorageMigrated"
	// TypeOldVersionsRemovable is True when a conversion CRD has versions
	// that store no object: the author may stop serving them and remove
	// them from the CRD (the message names them).
	TypeOldVersionsRemovable = "OldVersionsRemovable"
)

// Condition and phase reasons.
const (
	// ReasonSucceeded: the condition holds.
	ReasonSucceeded = "Succeeded"
	// ReasonInProgress: a step is under way; nothing to do but wait.
	ReasonInProgress = "InProgress"
	// ReasonCRDNotFound: a conversion CRD does not exist yet; create it (Hookwright watches for it).
	ReasonCRDNotFound = "CRDNotFound"
	// ReasonPreserveUnknownFields: the CRD sets preserveUnknownFields; webhook conversion needs it false.
	ReasonPreserveUnknownFields = "PreserveUnknownFields"
	// ReasonOwnerConflict: another WebhookInstall owns the CRD; the message names it and how to hand over.
	ReasonOwnerConflict = "OwnerConflict"
	// ReasonForeignConversion: the CRD's conversion was written by someone else; hand it over with the annotation.
	ReasonForeignConversion = "ForeignConversion"
	// ReasonCertificateFailed: issuing or storing a certificate failed.
	ReasonCertificateFailed = "CertificateFailed"
	// ReasonInstallComponentFailed: a Deployment, Service or ServiceAccount could not be applied.
	ReasonInstallComponentFailed = "InstallComponentFailed"
	// ReasonDeploymentUnavailable: a webhook Deployment is not available yet.
	ReasonDeploymentUnavailable = "DeploymentUnavailable"
	// ReasonConversionFailed: the API server could not convert through the webhook, for none of the reasons below; the message has its error.
	ReasonConversionFailed = "ConversionFailed"
	// ReasonWebhookUntrusted: the caBundle does not trust the webhook's serving certificate (the API server's x509/TLS error); rotations wait.
	ReasonWebhookUntrusted = "WebhookUntrusted"
	// ReasonWebhookUnreachable: the API server could not connect to the webhook (no serving pod, connection refused, timeout); rotations wait.
	ReasonWebhookUnreachable = "WebhookUnreachable"
	// ReasonWebhookPathNotFound: the webhook answered HTTP 404 at the install's webhookPath; trust is proven, but nothing converts.
	ReasonWebhookPathNotFound = "WebhookPathNotFound"
	// ReasonConversionRefused: the API server reached and trusted the webhook, which refused to convert an object; rotations go on.
	ReasonConversionRefused = "ConversionRefused"
	// ReasonFieldManagerConflict: another field manager keeps rewriting spec.conversion; the message names it and the fix.
	ReasonFieldManagerConflict = "FieldManagerConflict"
	// ReasonNoConflict: no other field manager rewrote spec.conversion repeatedly.
	ReasonNoConflict = "NoConflict"
	// ReasonNoObjectsToVerify: no object exists yet and a dry-run create was
	// rejected before it reached the webhook, so nothing is verified yet;
	// verification runs again on the next change (e.g. the first object).
	ReasonNoObjectsToVerify = "NoObjectsToVerify"
	// ReasonVerificationForbidden: RBAC forbids Hookwright to read (or
	// dry-run create) the converted resource, so the conversion is configured
	// but unverified; grant list and create on it (the message says how).
	ReasonVerificationForbidden = "VerificationForbidden"
	// ReasonHandoverPending: this install replaces the CRDs' owner and takes
	// them over once its own webhook Deployments are fully rolled out.
	ReasonHandoverPending = "HandoverPending"
	// ReasonReplacing: a newer install (named in the message) replaces this
	// one; nothing to do but wait, or delete the newer one to roll back.
	ReasonReplacing = "Replacing"
	// ReasonReplaced: the newer install took over every CRD; this one's
	// workloads are removed and it can be deleted.
	ReasonReplaced = "Replaced"
	// ReasonNameTaken: a Deployment, Service or Secret this install needs
	// belongs to another WebhookInstall that this one does not replace, or
	// an admission configuration of the install's derived name exists and
	// is another install's or not Hookwright's at all.
	ReasonNameTaken = "NameTaken"
	// ReasonKeptAlive: the install no longer lists (deleted, replaced, or a
	// new version dropped) CRDs whose conversion None would make unreadable,
	// so it keeps their webhook serving; the message names them and how to finish.
	ReasonKeptAlive = "KeptAlive"
	// ReasonKeptServiceTaken: this install would adopt the Deployment through
	// which the install it replaces keeps serving a CRD this one does not list.
	ReasonKeptServiceTaken = "KeptServiceTaken"
	// ReasonAdmissionGuardNotInForce: the ValidatingAdmissionPolicy that
	// checks an install's creator may patch its CRDs is missing or changed,
	// so Hookwright claims no new CRD; the message says what to reapply.
	ReasonAdmissionGuardNotInForce = "AdmissionGuardNotInForce"
	// ReasonNamespaceNotAllowed: installs are refused in Hookwright's own
	// namespace and in kube-* namespaces unless the operator allows them.
	ReasonNamespaceNotAllowed = "NamespaceNotAllowed"
	// ReasonServiceAccountNotAllowed: a webhook pod would run as
	// Hookwright's own ServiceAccount.
	ReasonServiceAccountNotAllowed = "ServiceAccountNotAllowed"
	// ReasonCRDNotAllowed: the install lists one of Hookwright's own CRDs,
	// which no install may convert.
	ReasonCRDNotAllowed = "CRDNotAllowed"
	// ReasonAdmissionNotVerified: admission webhooks are registered but the
	// API server has not called them through their configuration yet.
	ReasonAdmissionNotVerified = "AdmissionNotVerified"
	// ReasonWebhookErrored: the API server reached and trusted an admission
	// webhook, which answered with an error status or a review it could not
	// read; trust is proven, so rotations go on.
	ReasonWebhookErrored = "WebhookErrored"
	// ReasonMigrationRunning: a storage migration is rewriting objects; the message counts them.
	ReasonMigrationRunning = "MigrationRunning"
	// ReasonMigrationFailed: a storage migration stopped; the message names the object and the API server's error. storedVersions is untouched.
	ReasonMigrationFailed = "MigrationFailed"
	// ReasonMigrationWaiting: old versions are stored and the migration waits for a verified conversion.
	ReasonMigrationWaiting = "MigrationWaiting"
	// ReasonMigrationForbidden: RBAC forbids Hookwright to list or rewrite the converted resource, or to update the CRD's status; the message says what to grant.
	ReasonMigrationForbidden = "MigrationForbidden"
	// ReasonMigrationNotRequested: old versions are stored and the policy is Disabled, or OnRequest with no new request.
	ReasonMigrationNotRequested = "MigrationNotRequested"
	// ReasonNoVersionRemovable: every version of the CRDs is the storage version or still stores objects.
	ReasonNoVersionRemovable = "NoVersionRemovable"
	// ReasonVersionsRemovable: some versions store no object; the message names them and the CRDs.
	ReasonVersionsRemovable = "VersionsRemovable"
)
