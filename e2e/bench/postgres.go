package main

import (
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// postgresSubject runs a second copy of the deployed example server with its objects in a
// PostgreSQL cluster (through kine) instead of etcd, with the same arguments otherwise
// (delegating to the same kube-apiserver), and returns it as a direct subject.
func postgresSubject(r *cluster.Runner, backend *cluster.Backend, serverBin string, direct *rest.Config) (*subject, error) {
	pg := cluster.StartPostgres(r)
	port := cluster.FreePort(r)
	var args []string
	for _, a := range backend.Args {
		if strings.HasPrefix(a, "--etcd-servers=") || strings.HasPrefix(a, "--secure-port=") {
			continue
		}
		args = append(args, a)
	}
	args = append(args, "--secure-port="+strconv.Itoa(port), "--datastore-endpoint="+pg.DSN("marina"))
	proc := cluster.StartProcess(r, "marina-apiserver-postgres", serverBin, args...)
	cfg := rest.CopyConfig(direct)
	cfg.Host = "https://127.0.0.1:" + strconv.Itoa(port)
	proc.WaitReady(r, cfg, 3*time.Minute)
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &subject{id: sPostgres, client: client,
		collection: cfg.Host + "/apis/marina.example.com/v1alpha1/namespaces/%s/boats",
		api:        "marina.example.com/v1alpha1", procs: []*cluster.Process{proc}, store: proc, storeHost: cfg.Host, storeHTTP: client,
		path: []endpoint{{"server", cfg.Host, client}}}, nil
}
