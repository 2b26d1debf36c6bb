package httpauth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
)

// Cache lifetimes: controller-runtime's secure metrics filter's (a token's
// review 1 min, an allowed access 5 min, a denied one 30 s). A Prometheus
// scraping every 15 s asks the API server about its token once a minute.
const (
	DefaultTokenTTL  = time.Minute
	DefaultAllowTTL  = 5 * time.Minute
	DefaultDenyTTL   = 30 * time.Second
	DefaultCacheSize = 1024
)

// Config configures a Filter.
type Config struct {
	// Reviewer asks the API server; required.
	Reviewer Reviewer
	// Open are the paths served without a token (exact matches), for
	// probes: /healthz, /readyz.
	Open []string
	// TokenTTL is how long a token's review (valid or not) is reused;
	// AllowTTL and DenyTTL how long an access review is. Zero means the
	// defaults above; negative means no caching.
	TokenTTL, AllowTTL, DenyTTL time.Duration
	// CacheSize bounds each cache's entries (tokens; users and paths);
	// zero means DefaultCacheSize.
	CacheSize int
	// Metrics counts reviews and decisions; nil counts nothing.
	Metrics *Metrics
	// Log receives the errors of reviews that failed; the client only
	// learns that the API server could not be asked.
	Log logr.Logger
	// Clock reads the time for the caches; nil means the real clock.
	Clock clock.PassiveClock
}

// Filter authenticates and authorizes requests before they reach the
// handler it wraps. Safe for concurrent use; concurrent first requests
// with one token may each ask the API server.
type Filter struct {
	cfg    Config
	tokens *lru.Cache // sha256(token) -> entry[tokenResult]
	access *lru.Cache // accessKey -> entry[accessResult]
}

type entry[T any] struct {
	v       T
	expires time.Time
}

type tokenResult struct {
	user User
	ok   bool
}

type accessResult struct {
	allowed bool
	reason  string
}

// New returns a filter; cfg.Reviewer must be set.
func New(cfg Config) *Filter {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&cfg.TokenTTL, DefaultTokenTTL)
	def(&cfg.AllowTTL, DefaultAllowTTL)
	def(&cfg.DenyTTL, DefaultDenyTTL)
	if cfg.CacheSize <= 0 {
		cfg.CacheSize = DefaultCacheSize
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Filter{cfg: cfg, tokens: lru.New(cfg.CacheSize), access: lru.New(cfg.CacheSize)}
}

// Wrap returns a handler that serves next only to requests the API server
// authenticates and authorizes (and open paths to every request).
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if slices.Contains(f.cfg.Open, r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		d := f.decide(r)
		f.cfg.Metrics.decision(d.result)
		if d.code != http.StatusOK {
			if d.code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="snug"`)
			}
			http.Error(w, d.msg, d.code)
			return
		}
		// The token is the caller's credential, not the handler's business.
		r.Header.Del("Authorization")
		next.ServeHTTP(w, r)
	})
}

// decision is what becomes of a request: an HTTP status, the message for
// the client and the metric's result label.
type decision struct {
	code   int
	msg    string
	result string
}

func (f *Filter) decide(r *http.Request) decision {
	token, ok := BearerToken(r.Header.Get("Authorization"))
	if !ok {
		return decision{http.StatusUnauthorized, "Unauthorized: no bearer token (Authorization: Bearer <ServiceAccount token>)", resultUnauthenticated}
	}
	tr, err := f.reviewToken(r, token)
	if err != nil {
		f.cfg.Log.Error(err, "authenticating a request", "path", r.URL.Path, "remote", r.RemoteAddr)
		return decision{http.StatusServiceUnavailable, "Service Unavailable: the API server could not review the token; try again", resultError}
	}
	if !tr.ok {
		return decision{http.StatusUnauthorized, "Unauthorized: the API server does not accept the token", resultUnauthenticated}
	}
	verb := Verb(r.Method)
	ar, err := f.reviewAccess(r, tr.user, verb)
	if err != nil {
		f.cfg.Log.Error(err, "authorizing a request", "user", tr.user.Name, "verb", verb, "path", r.URL.Path)
		return decision{http.StatusServiceUnavailable, "Service Unavailable: the API server could not review the access; try again", resultError}
	}
	if !ar.allowed {
		msg := "Forbidden: user " + tr.user.Name + " may not " + verb + " " + r.URL.Path
		if ar.reason != "" {
			msg += ": " + ar.reason
		}
		return decision{http.StatusForbidden, msg, resultForbidden}
	}
	return decision{http.StatusOK, "", resultAllowed}
}

func (f *Filter) reviewToken(r *http.Request, token string) (tokenResult, error) {
	sum := sha256.Sum256([]byte(token))
	key := hex.EncodeToString(sum[:])
	now := f.cfg.Clock.Now()
	if v, ok := f.tokens.Get(key); ok {
		if e := v.(entry[tokenResult]); now.Before(e.expires) {
			f.cfg.Metrics.cacheHit(reviewToken)
			return e.v, nil
		}
		f.tokens.Remove(key)
	}
	u, valid, err := f.cfg.Reviewer.ReviewToken(r.Context(), token)
	f.cfg.Metrics.review(reviewToken, valid, err)
	if err != nil {
		return tokenResult{}, err
	}
	res := tokenResult{user: u, ok: valid}
	if f.cfg.TokenTTL > 0 {
		f.tokens.Add(key, entry[tokenResult]{res, now.Add(f.cfg.TokenTTL)})
	}
	return res, nil
}

func (f *Filter) reviewAccess(r *http.Request, u User, verb string) (accessResult, error) {
	key := accessKey(u, verb, r.URL.Path)
	now := f.cfg.Clock.Now()
	if v, ok := f.access.Get(key); ok {
		if e := v.(entry[accessResult]); now.Before(e.expires) {
			f.cfg.Metrics.cacheHit(reviewAccess)
			return e.v, nil
		}
		f.access.Remove(key)
	}
	allowed, reason, err := f.cfg.Reviewer.ReviewAccess(r.Context(), u, verb, r.URL.Path)
	f.cfg.Metrics.review(reviewAccess, allowed, err)
	if err != nil {
		return accessResult{}, err
	}
	res := accessResult{allowed: allowed, reason: reason}
	ttl := f.cfg.DenyTTL
	if allowed {
		ttl = f.cfg.AllowTTL
	}
	if ttl > 0 {
		f.access.Add(key, entry[accessResult]{res, now.Add(ttl)})
	}
	return res, nil
}

// accessKey names one user's one verb on one path: every field of the
// user counts, as the SubjectAccessReview carries them all.
func accessKey(u User, verb, path string) string {
	var b strings.Builder
	for _, s := range []string{u.Name, u.UID, verb, path} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	groups := slices.Clone(u.Groups)
	slices.Sort(groups)
	for _, g := range groups {
		b.WriteString(g)
		b.WriteByte(1)
	}
	b.WriteByte(0)
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(2)
		for _, v := range u.Extra[k] {
			b.WriteString(v)
			b.WriteByte(1)
		}
		b.WriteByte(0)
	}
	return b.String()
}

// BearerToken returns the token of an Authorization header "Bearer
// <token>" (the scheme in any case, as the API server accepts it), or
// false when there is none.
func BearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// Verb is the authorization verb of an HTTP method on a non-resource
// path, as the API server maps it: get for GET and HEAD, the lowercase
// method otherwise (post, put, delete...).
func Verb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, "":
		return "get"
	}
	return strings.ToLower(method)
}
