package httpauth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/snug-dev/snug/internal/kube"
)

// User is who a token belongs to, as the API server's TokenReview says.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Reviewer asks the API server about a request. An error means it could
// not answer (unreachable, timed out, refused the review itself); a token
// it does not accept or an access it denies are answers, not errors.
type Reviewer interface {
	// ReviewToken returns the token's user and true, or false when the
	// token is not valid.
	ReviewToken(ctx context.Context, token string) (User, bool, error)
	// ReviewAccess returns whether u may do verb on the non-resource
	// path, and the authorizer's reason.
	ReviewAccess(ctx context.Context, u User, verb, path string) (bool, string, error)
}

// APIReviewer is a Reviewer that creates TokenReviews and
// SubjectAccessReviews through a REST client of the API server. The
// client may be configured for any API group (AbsPath names the group);
// its serializer need only decode metav1.Status, for errors. Safe for
// concurrent use.
type APIReviewer struct {
	// Client sends the requests.
	Client rest.Interface
	// Timeout bounds each review; zero means 10 s.
	Timeout time.Duration
}

var _ Reviewer = (*APIReviewer)(nil)

// ReviewToken implements Reviewer with a TokenReview for the API server's
// own audiences.
func (a *APIReviewer) ReviewToken(ctx context.Context, token string) (User, bool, error) {
	in := &authenticationv1.TokenReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authenticationv1.SchemeGroupVersion.String(), Kind: "TokenReview"},
		Spec:     authenticationv1.TokenReviewSpec{Token: token},
	}
	var out authenticationv1.TokenReview
	if err := a.create(ctx, "/apis/authentication.k8s.io/v1/tokenreviews", in, &out); err != nil {
		return User{}, false, fmt.Errorf("creating a TokenReview: %w", err)
	}
	if !out.Status.Authenticated {
		return User{}, false, nil
	}
	u := out.Status.User
	return User{Name: u.Username, UID: u.UID, Groups: u.Groups, Extra: extraToMap(u.Extra)}, true, nil
}

// ReviewAccess implements Reviewer with a SubjectAccessReview of the
// non-resource path.
func (a *APIReviewer) ReviewAccess(ctx context.Context, u User, verb, path string) (bool, string, error) {
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range u.Extra {
		extra[k] = v
	}
	in := &authorizationv1.SubjectAccessReview{
		TypeMeta: metav1.TypeMeta{APIVersion: authorizationv1.SchemeGroupVersion.String(), Kind: "SubjectAccessReview"},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			User: u.Name, UID: u.UID, Groups: u.Groups, Extra: extra,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
		},
	}
	var out authorizationv1.SubjectAccessReview
	if err := a.create(ctx, "/apis/authorization.k8s.io/v1/subjectaccessreviews", in, &out); err != nil {
		return false, "", fmt.Errorf("creating a SubjectAccessReview: %w", err)
	}
	reason := out.Status.Reason
	if out.Status.EvaluationError != "" {
		reason += " (evaluation error: " + out.Status.EvaluationError + ")"
	}
	return out.Status.Allowed && !out.Status.Denied, reason, nil
}

func (a *APIReviewer) create(ctx context.Context, path string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := a.Client.Post().AbsPath(path).
		SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").
		Body(body).Do(ctx).Raw()
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("decoding the answer: %w", err)
	}
	return nil
}

func extraToMap(e map[string]authenticationv1.ExtraValue) map[string][]string {
	if len(e) == 0 {
		return nil
	}
	out := make(map[string][]string, len(e))
	for k, v := range e {
		out[k] = v
	}
	return out
}

// ForConfig returns an APIReviewer over a REST client of its own for the
// API server cfg names (cfg is copied). Its own client has its own rate
// limiter, so requests with forged tokens cannot use up the request budget
// of the component's other clients.
func ForConfig(cfg *rest.Config) (*APIReviewer, error) {
	c, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("making a client for reviews: %w", err)
	}
	return &APIReviewer{Client: c.RESTClient()}, nil
}
