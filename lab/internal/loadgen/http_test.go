package loadgen

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHandler(t *testing.T) {
	var fake fakeLoad
	g := NewGenerator(&fake, &fake, &fakeCache{}, io.Discard)
	g.Start(Targets{CPUMillis: 100})
	srv := httptest.NewServer(Handler(g))
	defer srv.Close()

	tests := []struct {
		name, method, target, form string
		wantCode                   int
		want                       *status // JSON body, if 200
		wantBody                   string  // substring of an error body
	}{
		{"get", "GET", "/", "", 200, &status{"100m", "0", 100, 0, 0}, ""},
		{"put both", "PUT", "/?cpu=300m&memory=100Mi", "", 200, &status{"300m", "100Mi", 300, 100 << 20, 0}, ""},
		{"post cpu", "POST", "/?cpu=1.5", "", 200, &status{"1500m", "100Mi", 1500, 100 << 20, 0}, ""},
		{"post form", "POST", "/", "memory=104857600", 200, &status{"1500m", "100Mi", 1500, 100 << 20, 0}, ""},
		{"get after", "GET", "/", "", 200, &status{"1500m", "100Mi", 1500, 100 << 20, 0}, ""},
		{"nothing", "PUT", "/", "", 400, nil, "nothing to set"},
		{"bad cpu", "PUT", "/?cpu=lots", "", 400, nil, `parsing cpu "lots"`},
		{"unknown", "PUT", "/?disk=1", "", 400, nil, `unknown key "disk"`},
		{"twice", "PUT", "/?cpu=1&cpu=2", "", 400, nil, "cpu given 2 times"},
		{"delete", "DELETE", "/", "", 405, nil, ""},
		{"other path", "GET", "/metrics", "", 404, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.form != "" {
				body = strings.NewReader(tt.form)
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.target, body)
			if err != nil {
				t.Fatal(err)
			}
			if tt.form != "" {
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.wantCode {
				t.Fatalf("status %d (%s), want %d", resp.StatusCode, b, tt.wantCode)
			}
			if !strings.Contains(string(b), tt.wantBody) {
				t.Errorf("body %q, want it to contain %q", b, tt.wantBody)
			}
			if tt.want == nil {
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var got status
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("decoding %s: %v", b, err)
			}
			if d := cmp.Diff(*tt.want, got); d != "" {
				t.Errorf("body (-want +got):\n%s", d)
			}
		})
	}
	if (fake != fakeLoad{1500, 100 << 20}) {
		t.Errorf("load set to %+v", fake)
	}
}
