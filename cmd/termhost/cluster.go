package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/termhost/termhost/actors/cluster"
	"github.com/termhost/termhost/actors/cluster/nodeauth"
	"github.com/termhost/termhost/server"
)

// clusterSecretEnv is where the cluster's secret may come from instead of a file.
const clusterSecretEnv = "TERMHOST_CLUSTER_SECRET"

// clusterFlags are serve's flags that make the host a node of a cluster.
type clusterFlags struct {
	name, nodeAddr, nodeName, etcd, seeds, secretFile string
	usersDir                                          string
	seedPort                                          int
	tls                                               nodeauth.TLSFiles
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name (needs --node-addr, a provider and the cluster secret)")
	fs.StringVar(&c.nodeAddr, "node-addr", "", "HOST:PORT other nodes reach this node at (with --cluster)")
	fs.StringVar(&c.nodeName, "node-name", "", "this node's name on rows and in createTerminal's _meta.node (default: --node-addr)")
	fs.StringVar(&c.etcd, "etcd", "", "URL,…: the etcd cluster membership is kept in")
	fs.StringVar(&c.seeds, "seeds", "", "HOST:PORT,…: every node's seed address (the seeds provider, polled once a second; this node's included)")
	fs.IntVar(&c.seedPort, "seed-port", 0, "the port this node answers --seeds polls on (default: the --node-addr port + 1)")
	fs.StringVar(&c.secretFile, "cluster-secret-file", "", "file holding the cluster's shared secret (else $"+clusterSecretEnv+")")
	fs.StringVar(&c.tls.Cert, "cluster-cert", "", "PEM certificate of this node, for mutual TLS between nodes")
	fs.StringVar(&c.tls.Key, "cluster-key", "", "PEM key of --cluster-cert")
	fs.StringVar(&c.tls.CA, "cluster-ca", "", "PEM CA every node's certificate is signed by")
	fs.StringVar(&c.usersDir, "users-dir", "", "the folder of users.json and owner.token (default --state-dir); every node's users are the cluster's whether or not they share one")
}

// usersFolder is where the users are kept: --users-dir, else the state folder. Tokens
// are added there with `termhost token add --state-dir <that folder>`.
func (c *clusterFlags) usersFolder(stateDir string) string {
	if c.usersDir != "" {
		return c.usersDir
	}
	return stateDir
}

// options are the cluster's options, nil without --cluster.
func (c *clusterFlags) options() (*cluster.Options, error) {
	if c.name == "" {
		if c.nodeAddr != "" || c.etcd != "" || c.seeds != "" {
			return nil, errors.New("--node-addr, --etcd and --seeds need --cluster NAME")
		}
		return nil, nil
	}
	if c.nodeAddr == "" {
		return nil, errors.New("--cluster needs --node-addr HOST:PORT")
	}
	secret := []byte(os.Getenv(clusterSecretEnv))
	if c.secretFile != "" {
		b, err := os.ReadFile(c.secretFile)
		if err != nil {
			return nil, fmt.Errorf("--cluster-secret-file: %w", err)
		}
		secret = []byte(strings.TrimSpace(string(b)))
	}
	if len(secret) == 0 {
		return nil, errors.New("--cluster needs the cluster's secret: --cluster-secret-file FILE or $" + clusterSecretEnv)
	}
	return &cluster.Options{Cluster: c.name, Name: c.nodeName, NodeAddr: c.nodeAddr, Etcd: splitList(c.etcd), Seeds: splitList(c.seeds),
		SeedPort: c.seedPort, Secret: secret, TLS: c.tls}, nil
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// drainFirst is the context serve runs under: with --drain, the signal that ends ctx
// first drains the host (no new terminals; the shells end by themselves, up to the
// deadline), and only then ends the context returned.
func drainFirst(ctx context.Context, drain bool, deadline time.Duration, srv *server.Server, logger *slog.Logger) context.Context {
	if !drain {
		return ctx
	}
	serveCtx, stop := context.WithCancel(context.Background())
	go func() {
		defer stop()
		<-ctx.Done()
		logger.Info("draining: no new terminals; waiting for the shells to end", "deadline", deadline)
		dctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		if err := srv.Drain(dctx); err != nil {
			logger.Warn("the drain's deadline passed with shells still running; they are ended now", "err", err)
			return
		}
		logger.Info("drained: every shell has ended")
	}()
	return serveCtx
}
