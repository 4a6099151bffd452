// Command etcdprobe tries to reach an etcd and reports what happened; the end-to-end
// tests run it as another local user to show that the embedded etcd refuses them.
//
//	etcdprobe unix:///tmp/aagen-etcd-123/client.sock
//
// It first opens the socket (or TCP address) itself, then writes and reads a key through
// etcd's client. It prints each step and exits 0 when both worked, 3 when one failed.
package main

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// probeKey is the key the probe writes.
const probeKey = "/registry/etcdprobe"

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: etcdprobe <etcd URL>")
		os.Exit(2)
	}
	os.Exit(probe(os.Args[1]))
}

func probe(etcdURL string) int {
	u, err := url.Parse(etcdURL)
	if err != nil {
		fmt.Printf("url: %v\n", err)
		return 3
	}
	network, addr := "tcp", u.Host
	if u.Scheme == "unix" || u.Scheme == "unixs" {
		network, addr = "unix", u.Host+u.Path
	}
	conn, err := net.DialTimeout(network, addr, 3*time.Second)
	if err != nil {
		fmt.Printf("dial: %v\n", err)
		return 3
	}
	conn.Close()
	fmt.Println("dial: ok")
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{etcdURL}, DialTimeout: 3 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		fmt.Printf("client: %v\n", err)
		return 3
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, probeKey, fmt.Sprintf("written by uid %d", os.Getuid())); err != nil {
		fmt.Printf("put: %v\n", err)
		return 3
	}
	resp, err := c.Get(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		fmt.Printf("get: %v\n", err)
		return 3
	}
	fmt.Printf("put and list: ok (%d keys under /registry/)\n", len(resp.Kvs))
	return 0
}
