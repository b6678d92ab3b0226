// Package nodeauth owns how termhost's cluster nodes prove themselves to one
// another: a proof made from the shared secret on every gRPC call of protoactor-go's
// remote, checked on every call received, mutual TLS when certificates are given,
// and the gRPC settings of the links between nodes.
package nodeauth

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// secretHeader is the gRPC metadata key every call between nodes carries its proof in.
const secretHeader = "x-termhost-cluster"

// proof is what a node shows another on every call: an HMAC of the cluster's name
// under the shared secret, so the secret itself never goes on the wire. Without TLS
// the proof can be read off the network and replayed; with --cluster-cert it cannot.
func proof(secret []byte, clusterName string) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("termhost cluster " + clusterName))
	return hex.EncodeToString(mac.Sum(nil))
}

// secretCredentials puts the proof on every call this node makes.
type secretCredentials struct {
	proof string
	tls   bool
}

func (c secretCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{secretHeader: c.proof}, nil
}

func (c secretCredentials) RequireTransportSecurity() bool { return c.tls }

// checkProof refuses a call that does not carry this cluster's proof.
func checkProof(ctx context.Context, want string) error {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, got := range md.Get(secretHeader) {
		if hmac.Equal([]byte(got), []byte(want)) {
			return nil
		}
	}
	return status.Error(codes.Unauthenticated, "termhost: this node does not hold the cluster's secret")
}

// TLSFiles are the PEM files of mutual TLS between nodes: this node's certificate and
// key, and the CA every node's certificate is signed by. All three or none.
type TLSFiles struct {
	Cert, Key, CA string
}

func (t TLSFiles) enabled() bool { return t.Cert != "" || t.Key != "" || t.CA != "" }

// windowSize is the HTTP/2 flow-control window of every stream and connection
// between nodes. Fixed, not grpc-go's default dynamic one: that one measures the
// bandwidth by answering a node's message with a ping (BDP estimation), and for a
// keystroke's few bytes the ping and its ack are two more writes and wake-ups on each
// node, right when the echo is on its way.
//
// The write buffer is off (size 0) on both sides: grpc-go's writer, with a buffer,
// yields its goroutine once before it flushes a write under 1,000 bytes (to gather
// more), and on a busy machine a keystroke's message waits there for whatever else
// is runnable. Without one, each HTTP/2 frame goes to the socket as it is made.
const windowSize = 8 << 20

// maxMessage is the largest gRPC message a node takes from another. protoactor's
// endpoint writer sends up to a thousand queued messages as one, and under a flood
// each can be a frame message of up to openLimit: grpc-go's default of 4 MiB would
// end the stream (and drop what it carried) once a node fell that far behind.
const maxMessage = 512 << 20

// GRPCOptions are remote's server and dial options for this cluster: every call
// carries the proof and every incoming call is checked for it, over mutual TLS when
// files are given.
func GRPCOptions(secret []byte, clusterName string, files TLSFiles) ([]grpc.ServerOption, []grpc.DialOption, error) {
	if len(secret) == 0 {
		return nil, nil, errors.New("cluster: a cluster secret is required (--cluster-secret-file or TERMHOST_CLUSTER_SECRET)")
	}
	want := proof(secret, clusterName)
	server := []grpc.ServerOption{
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := checkProof(ctx, want); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := checkProof(ss.Context(), want); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	}
	creds := secretCredentials{proof: want}
	transport := insecure.NewCredentials()
	if files.enabled() {
		serverTLS, clientTLS, err := mutualTLS(files)
		if err != nil {
			return nil, nil, err
		}
		server = append(server, grpc.Creds(credentials.NewTLS(serverTLS)))
		transport = credentials.NewTLS(clientTLS)
		creds.tls = true
	}
	server = append(server, grpc.InitialWindowSize(windowSize), grpc.InitialConnWindowSize(windowSize), grpc.WriteBufferSize(0),
		grpc.MaxRecvMsgSize(maxMessage))
	dial := []grpc.DialOption{grpc.WithTransportCredentials(transport), grpc.WithPerRPCCredentials(creds),
		grpc.WithInitialWindowSize(windowSize), grpc.WithInitialConnWindowSize(windowSize), grpc.WithWriteBufferSize(0)}
	return server, dial, nil
}

// mutualTLS reads the files into a server side that asks every caller for a
// certificate the CA signed, and a client side that shows this node's and checks the
// other's against the same CA.
func mutualTLS(files TLSFiles) (server, client *tls.Config, err error) {
	if files.Cert == "" || files.Key == "" || files.CA == "" {
		return nil, nil, errors.New("cluster: mutual TLS needs --cluster-cert, --cluster-key and --cluster-ca together")
	}
	cert, err := tls.LoadX509KeyPair(files.Cert, files.Key)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: reading the node's certificate: %w", err)
	}
	pem, err := os.ReadFile(files.CA)
	if err != nil {
		return nil, nil, fmt.Errorf("cluster: reading the cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, nil, fmt.Errorf("cluster: %s holds no PEM certificate", files.CA)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}
	return server, client, nil
}
