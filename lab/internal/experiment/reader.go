package experiment

import (
	"context"
	"errors"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/snug-dev/snug/config/rbac"
)

// ReaderTokenSeconds is how long a Reader's token is valid: longer than a
// demo or a bench run.
const ReaderTokenSeconds = 12 * 60 * 60

// Reader is a ServiceAccount bound to the ClusterRole snug-metrics-reader
// and a token of it, for the lab's own clients of the agent's /metrics and
// JSON API and the controller's /metrics (which want a bearer token when
// they run with --auth, the default). NewReader makes one; Delete removes
// what NewReader created.
type Reader struct {
	// Token is the ServiceAccount's token, from the TokenRequest API.
	Token string
	// Namespace and Name are the ServiceAccount's, and Name is the
	// ClusterRoleBinding's.
	Namespace, Name string

	client      kubernetes.Interface
	createdRole bool
}

// NewReader creates (or reuses) the ServiceAccount namespace/name, binds
// it to snug-metrics-reader with a ClusterRoleBinding of the same name
// (creating the ClusterRole from config/rbac when the cluster has none),
// and mints a token for it.
func NewReader(ctx context.Context, client kubernetes.Interface, namespace, name string) (r *Reader, err error) {
	r = &Reader{Namespace: namespace, Name: name, client: client}
	defer func() {
		if err != nil {
			err = errors.Join(err, r.Delete(context.WithoutCancel(ctx)))
		}
	}()
	objs, err := rbac.Decode(rbac.MetricsReaderFile)
	if err != nil {
		return r, err
	}
	if len(objs.ClusterRoles) != 1 || objs.ClusterRoles[0].Name != rbac.MetricsReaderClusterRole {
		return r, fmt.Errorf("%s: want the one ClusterRole %s", rbac.MetricsReaderFile, rbac.MetricsReaderClusterRole)
	}
	_, err = client.RbacV1().ClusterRoles().Create(ctx, objs.ClusterRoles[0], metav1.CreateOptions{})
	switch {
	case err == nil:
		r.createdRole = true
	case !apierrors.IsAlreadyExists(err):
		return r, fmt.Errorf("creating ClusterRole %s: %w", rbac.MetricsReaderClusterRole, err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app.kubernetes.io/managed-by": "snug-lab"}}}
	if _, err := client.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return r, fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: sa.Labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: rbac.MetricsReaderClusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if _, err := client.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return r, fmt.Errorf("creating ClusterRoleBinding %s: %w", name, err)
	}
	r.Token, err = ServiceAccountToken(ctx, client, namespace, name, ReaderTokenSeconds)
	return r, err
}

// ServiceAccountToken mints a token of the ServiceAccount namespace/name
// with the TokenRequest API, valid for seconds, for the API server's own
// audience.
func ServiceAccountToken(ctx context.Context, client kubernetes.Interface, namespace, name string, seconds int64) (string, error) {
	tr, err := client.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &seconds},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return tr.Status.Token, nil
}

// Delete removes the binding, the ServiceAccount and, when NewReader
// created it, the ClusterRole; what is already gone is no error.
func (r *Reader) Delete(ctx context.Context) error {
	var errs []error
	ignore := func(err error) {
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	ignore(r.client.RbacV1().ClusterRoleBindings().Delete(ctx, r.Name, metav1.DeleteOptions{}))
	ignore(r.client.CoreV1().ServiceAccounts(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{}))
	if r.createdRole {
		ignore(r.client.RbacV1().ClusterRoles().Delete(ctx, rbac.MetricsReaderClusterRole, metav1.DeleteOptions{}))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("deleting the reader %s/%s: %w", r.Namespace, r.Name, err)
	}
	return nil
}
