package controllers

// The manager's ClusterRole, rule by rule, each with the code that uses
// it. `make manifests` turns these markers into config/rbac/role.yaml, and
// the controllers suite compares that role with the requests the operator
// made (the API server's audit log): a rule no suite uses, or a request the
// role does not allow, fails it. Leader election is granted apart, by a
// Role in Hookwright's own namespace (config/rbac/leader_election_role.yaml).
//
// WebhookInstalls: read through the cache; patch adds and removes the
// finalizer; status is written with an optimistic-concurrency update.
// +kubebuilder:rbac:groups=operators.hookwright.dev,resources=webhookinstalls,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=operators.hookwright.dev,resources=webhookinstalls/status,verbs=update
//
// Finalizers: the OwnerReferencesPermissionEnforcement admission plugin
// (on in OpenShift and hardened clusters) requires update on the owner's
// finalizers to set blockOwnerDeletion in the owner references of the
// Deployments, Services and Secrets Hookwright creates for an install.
// +kubebuilder:rbac:groups=operators.hookwright.dev,resources=webhookinstalls/finalizers,verbs=update
//
// Deployments, Services and Secrets in every namespace, because installs
// live in any namespace: cached (by Hookwright's label only), written with
// server-side apply (create is checked when an apply creates), deleted on
// uninstall and hand-over with UID and resourceVersion preconditions.
// Secrets are also patched with optimistic concurrency (rotation records).
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services;secrets,verbs=get;list;watch;create;patch;delete
//
// ServiceAccounts: a pod spec's missing ServiceAccount is created bare (no
// permission is ever granted on anyone's behalf); get checks it first.
// The ones Hookwright created (by its label) are deleted with the install
// that needed them (finalize.go), with UID and resourceVersion preconditions.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create;delete
//
// EndpointSlices: before a CRD or admission configuration is first pointed
// at a webhook Service, Hookwright waits until one of that Service's slices
// lists a ready endpoint: an available Deployment alone does not mean the
// API server can reach it (endpoints.go). It watches only the slices of its
// own Services (the EndpointSlice controller copies a Service's labels to
// its slices, Hookwright's managed-by label included), so a slice turning
// ready wakes the install at once.
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list;watch
//
// Namespaces: a deleted install reads its own namespace (get, live, once
// per pass while it finalizes): when the namespace itself is being
// deleted, nothing can keep a webhook serving there, so the finalizer must
// not wait for it (finalize.go).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
//
// CRDs: cached as metadata only (list, watch), read live (get), and
// patched: the ownership claim annotation and spec.conversion (apply).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch;patch
//
// CRD status: once a storage migration has rewritten every object, the
// migrated versions are removed from status.storedVersions (an update with
// the CRD's resourceVersion as precondition; step_migration.go). Listing
// and rewriting the converted objects themselves is the author's grant,
// per resource, as for verification (the admin guide has the ClusterRole).
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=update
//
// StorageVersionMigrations: where the cluster serves the in-tree API,
// kube-controller-manager does the rewriting: Hookwright creates one per
// migration, reads its progress, and deletes it once done
// (migration_intree.go).
// +kubebuilder:rbac:groups=storagemigration.k8s.io,resources=storageversionmigrations,verbs=get;create;delete
//
// TrustProbes: only ever dry-run created, so the API server converts one
// through a webhook with the caBundle a CA rotation must prove
// (trustprobe.go); nothing is stored. The probe CRDs' own spec.conversion
// is patched under the rule above; four of them (probe_pool.go).
// +kubebuilder:rbac:groups=operators.hookwright.dev,resources=trustprobes;trustprobes2;trustprobes3;trustprobes4;trustprobes5,verbs=create
//
// The admission guard (controllers/guard): read by name before any new CRD
// claim, to refuse claims while it is not in force.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings,verbs=get,resourceNames=hookwright-install-authority
//
// Admission configurations: each install's ValidatingWebhookConfiguration
// and MutatingWebhookConfiguration (step_admission.go), cached by
// Hookwright's label (list, watch) so drift wakes the install; read live
// by name (get) when the cache has none of the install's derived name, so
// a foreign one is never overwritten, and to confirm they are gone before
// an install's workloads are removed; written with server-side apply
// (patch, and create when an apply creates); deleted, with UID and
// resourceVersion preconditions, when an install is deleted or replaced or
// declares no admission webhook of that kind any more (admission_delete.go).
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations;mutatingwebhookconfigurations,verbs=get;list;watch;create;patch;delete
//
// Events (events.k8s.io): created, and patched when a repeated event
// becomes a series.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The metrics endpoint authenticates and authorizes its scrapers through
// the API server (controller-runtime's metrics filters).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
