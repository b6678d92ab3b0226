package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/termhost/termhost/actors/cluster"
)

// clusterSecretEnv is where the cluster's secret may come from instead of a file.
const clusterSecretEnv = "TERMHOST_CLUSTER_SECRET"

// clusterFlags are serve's flags that make the host a node of a cluster.
type clusterFlags struct {
	name, nodeAddr, nodeName, etcd, seeds, secretFile string
	seedPort                                          int
	tls                                               cluster.TLSFiles
}

func (c *clusterFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.name, "cluster", "", "join the cluster of this name (needs --node-addr, a provider and the cluster secret)")
	fs.StringVar(&c.nodeAddr, "node-addr", "", "HOST:PORT other nodes reach this node at (with --cluster)")
	fs.StringVar(&c.nodeName, "node-name", "", "this node's name on rows and in createTerminal's _meta.node (default: --node-addr)")
	fs.StringVar(&c.etcd, "etcd", "", "URL,…: the etcd cluster membership is kept in")
	fs.StringVar(&c.seeds, "seeds", "", "HOST:PORT,…: every node's seed address (the automanaged provider; this node's included)")
	fs.IntVar(&c.seedPort, "seed-port", 0, "the port this node answers --seeds polls on (default: the --node-addr port + 1)")
	fs.StringVar(&c.secretFile, "cluster-secret-file", "", "file holding the cluster's shared secret (else $"+clusterSecretEnv+")")
	fs.StringVar(&c.tls.Cert, "cluster-cert", "", "PEM certificate of this node, for mutual TLS between nodes")
	fs.StringVar(&c.tls.Key, "cluster-key", "", "PEM key of --cluster-cert")
	fs.StringVar(&c.tls.CA, "cluster-ca", "", "PEM CA every node's certificate is signed by")
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
