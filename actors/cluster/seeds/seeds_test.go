package seeds

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A poll reads the automanaged provider's answer, field for field, and takes an
// answer that names no node, or is not a 200, for a miss.
func TestAskReadsAnAutomanagedAnswer(t *testing.T) {
	answers := map[string]string{
		"/ok/_health":      `{"id":"n1","address":"10.0.0.2","auto_manage_port":7101,"port":7100,"kinds":[],"cluster_name":"team"}`,
		"/noid/_health":    `{"address":"10.0.0.2","port":7100,"cluster_name":"team"}`,
		"/notjson/_health": `<html>`,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	p := New(nil, nil, Options{})

	n, err := p.ask(context.Background(), host+"/ok")
	if err != nil {
		t.Fatal(err)
	}
	if want := (Node{ID: "n1", Address: "10.0.0.2", AutoManagePort: 7101, Port: 7100, Kinds: []string{}, ClusterName: "team"}); n.ID != want.ID || n.Address != want.Address || n.Port != want.Port || n.AutoManagePort != want.AutoManagePort || n.ClusterName != want.ClusterName {
		t.Fatalf("the answer read: %+v, want %+v", n, want)
	}
	for _, path := range []string{"/noid", "/notjson", "/missing"} {
		if n, err := p.ask(context.Background(), host+path); err == nil {
			t.Fatalf("%s: read as %+v, want an error", path, n)
		}
	}
}
