package server_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/internal/client"
	"github.com/termhost/termhost/messages"
	"github.com/termhost/termhost/server"
)

func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestClusterInProcess runs two cluster nodes in one process with the seeds
// provider: a client of one drives a terminal of the other.
func TestClusterInProcess(t *testing.T) {
	seeds := []int{freeLoopbackPort(t), freeLoopbackPort(t)}
	var seedList []string
	for _, p := range seeds {
		seedList = append(seedList, fmt.Sprintf("127.0.0.1:%d", p))
	}
	node := func(name string, i int) hostOption {
		return func(c *server.Config) {
			c.Cluster = &cluster.Options{Cluster: "inproc", Name: name, NodeAddr: fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t)),
				Seeds: seedList, SeedPort: seeds[i], Secret: []byte("s")}
			c.Root.UsePty = true
		}
	}
	a := startHost(t, node("a", 0))
	b := startHost(t, node("b", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca := dialClient(t, ctx, a, "ca")
	cb := dialClient(t, ctx, b, "cb")
	const x = "ahp-terminal:/x"
	// Nothing tells a client that a node has joined but the node being there: the
	// create is retried under the deadline until node b is known.
	for {
		_, err := ca.Request(ctx, "createTerminal", map[string]any{"channel": x, "claim": map[string]any{"kind": "client", "clientId": "ca"}, "_meta": map[string]any{"node": "b"}})
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "no node") || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := ca.Subscribe(ctx, x); err != nil {
		t.Fatal(err)
	}
	if _, err := cb.Subscribe(ctx, x); err != nil {
		t.Fatal(err)
	}
	_ = ca.Dispatch(ctx, x, 1, map[string]any{"type": "terminal/input", "data": "echo x-$((6*7))\r"})
	var out strings.Builder
	for !strings.Contains(out.String(), "x-42") {
		select {
		case n := <-ca.Notifications:
			if n.Envelope != nil {
				t.Logf("%s %s", n.Envelope.Channel, n.Envelope.Action)
			}
			if n.Envelope != nil && n.Envelope.Channel == x && n.Envelope.Type == messages.TerminalData {
				a, _ := n.Envelope.Decode()
				out.WriteString(*a.Data)
			}
		case <-ctx.Done():
			t.Fatalf("no output: %q", out.String())
		}
	}
}

// TestClusterPing: one round trip between two nodes' node actors.
func TestClusterPing(t *testing.T) {
	seeds := []int{freeLoopbackPort(t), freeLoopbackPort(t)}
	seedList := []string{fmt.Sprintf("127.0.0.1:%d", seeds[0]), fmt.Sprintf("127.0.0.1:%d", seeds[1])}
	node := func(name string, i int) hostOption {
		return func(c *server.Config) {
			c.Cluster = &cluster.Options{Cluster: "ping", Name: name, NodeAddr: fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t)),
				Seeds: seedList, SeedPort: seeds[i], Secret: []byte("s")}
		}
	}
	a := startHost(t, node("a", 0))
	b := startHost(t, node("b", 1))
	if _, err := a.srv.Member().Ping(b.srv.Member().Addr(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
}

func dialClient(t *testing.T, ctx context.Context, h *testHost, id string) *client.Conn {
	c, err := client.Dial(ctx, h.url(h.owner), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Initialize(ctx, id, messages.RootURI); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestClusterMutualTLS: nodes given certificates speak mutual TLS to one another, and
// a node with the secret but no certificate is refused.
func TestClusterMutualTLS(t *testing.T) {
	dir := t.TempDir()
	files := writeClusterCerts(t, dir)
	seeds := []int{freeLoopbackPort(t), freeLoopbackPort(t), freeLoopbackPort(t)}
	seedList := []string{fmt.Sprintf("127.0.0.1:%d", seeds[0]), fmt.Sprintf("127.0.0.1:%d", seeds[1]), fmt.Sprintf("127.0.0.1:%d", seeds[2])}
	node := func(name string, i int, tls cluster.TLSFiles) hostOption {
		return func(c *server.Config) {
			c.Cluster = &cluster.Options{Cluster: "tls", Name: name, NodeAddr: fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t)),
				Seeds: seedList, SeedPort: seeds[i], Secret: []byte("s"), TLS: tls}
		}
	}
	a := startHost(t, node("a", 0, files))
	b := startHost(t, node("b", 1, files))
	plain := startHost(t, node("plain", 2, cluster.TLSFiles{}))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ca := dialClient(t, ctx, a, "ca")
	// Nothing tells a client that a node joined but the node being there: retried
	// under the deadline, as in TestClusterInProcess.
	for {
		_, err := ca.Request(ctx, "createTerminal", map[string]any{"channel": "ahp-terminal:/tls", "claim": map[string]any{"kind": "client", "clientId": "ca"}, "_meta": map[string]any{"node": "b", "x-termhost": map[string]any{"command": "true"}}})
		if err == nil {
			break
		}
		if !strings.Contains(err.Error(), "no node") || ctx.Err() != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The node without a certificate is never heard from: its own hellos fail, and so
	// do a's to it.
	if _, err := plain.srv.Member().Ping(a.srv.Member().Addr(), 2*time.Second); err == nil {
		t.Fatal("a node without a certificate reached a TLS node")
	}
	if _, err := a.srv.Member().Ping(b.srv.Member().Addr(), 10*time.Second); err != nil {
		t.Fatalf("TLS nodes: %v", err)
	}
}

// writeClusterCerts writes a CA and one node certificate (for 127.0.0.1) it signed.
func writeClusterCerts(t *testing.T, dir string) cluster.TLSFiles {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "termhost test CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	files := cluster.TLSFiles{Cert: filepath.Join(dir, "node.pem"), Key: filepath.Join(dir, "node.key"), CA: filepath.Join(dir, "ca.pem")}
	for path, block := range map[string]*pem.Block{files.Cert: {Type: "CERTIFICATE", Bytes: der}, files.Key: {Type: "EC PRIVATE KEY", Bytes: keyDER}, files.CA: {Type: "CERTIFICATE", Bytes: caDER}} {
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return files
}
