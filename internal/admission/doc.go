// Package admission is snug's mutating admission webhook for pod CREATE:
// a new pod of a workload with learnt history starts at the workload's
// recommendation instead of its template's values (updateMode Initial,
// InPlace and InPlaceOrRecreate).
//
// It owns the sizing decision (Size: pure, the resize planner's rules),
// the HTTPS handler (Handler: AdmissionReview in, JSON patch out, latency
// and outcome metrics), the serving certificate (CertSource: read from a
// Secret, reloaded when it changes) and, on the leader only, the
// certificate's life (Rotator: a self-signed CA and serving certificate in
// that Secret, renewed before expiry, the caBundle of the
// MutatingWebhookConfiguration kept current). It does not decide which
// pods the API server sends (the chart's selectors), and it never resizes
// a running pod (the agent does).
package admission
