// Command podbin is the static binary the node tests put in their images (cluster.Node):
// with no arguments it waits for SIGTERM, as a Pod sandbox's pause process does; with
// "serve ADDR" it answers HTTP on ADDR with its host name, and GET /resolve/NAME with the
// addresses NAME resolves to in the Pod (its resolv.conf: the cluster DNS), one per line.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	if len(os.Args) == 3 && os.Args[1] == "serve" {
		host, _ := os.Hostname()
		http.HandleFunc("/resolve/", func(w http.ResponseWriter, r *http.Request) {
			addrs, err := net.LookupHost(strings.TrimPrefix(r.URL.Path, "/resolve/"))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadGateway)
				return
			}
			fmt.Fprintln(w, strings.Join(addrs, "\n"))
		})
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
		if err := http.ListenAndServe(os.Args[2], nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	<-stop
}
