package cluster

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// FreePort returns a TCP port that is free on every address now and that nothing takes
// by itself before the caller's process listens on it: the port lies outside the kernel's
// ephemeral range (net.ipv4.ip_local_port_range), from which every listen on port 0 and
// every outgoing connection take theirs. A port picked by listening on port 0 and closing
// was in that range, and once, a proxy's listen took an etcd member's peer port in the
// moment before the member started, which left a 3-member cluster of two. Only another
// explicit choice of the same port can still take it: never one of this process (no port
// is returned twice), and another process's with a chance of one in the thousands.
func FreePort(t T) int {
	t.Helper()
	port, err := ports.take()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// ports are the ports this process has handed out.
var ports = &portPicker{low: 20000, high: 30000, given: map[int]bool{}}

// portPicker hands out ports of [low, high) outside the ephemeral range: high stays below
// 30000, where Kubernetes' node ports begin.
type portPicker struct {
	low, high int

	mu    sync.Mutex
	given map[int]bool
}

// take returns a port of the picker's range that is outside the ephemeral range, not yet
// given, and free: listening on it on every address succeeds.
func (p *portPicker) take() (int, error) {
	elow, ehigh, err := ephemeralRange()
	if err != nil {
		return 0, err
	}
	if elow <= p.low && ehigh >= p.high-1 {
		return 0, fmt.Errorf("no port of %d-%d lies outside the ephemeral range %d-%d (net.ipv4.ip_local_port_range): narrow that range", p.low, p.high-1, elow, ehigh)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for range 1000 {
		port := p.low + rand.IntN(p.high-p.low)
		if (port >= elow && port <= ehigh) || p.given[port] || !listenable(port) {
			continue
		}
		p.given[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("no free port among 1000 tries of %d-%d outside the ephemeral range %d-%d", p.low, p.high-1, elow, ehigh)
}

// listenable says whether a listen on port succeeds on every address and on 127.0.0.1.
func listenable(port int) bool {
	for _, addr := range []string{":", "127.0.0.1:"} {
		l, err := net.Listen("tcp", addr+strconv.Itoa(port))
		if err != nil {
			return false
		}
		_ = l.Close()
	}
	return true
}

// ephemeralRange is the kernel's range of ports for listens on port 0 and outgoing
// connections (Linux's default where /proc does not say).
func ephemeralRange() (low, high int, err error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if os.IsNotExist(err) {
		return 32768, 60999, nil
	}
	if err != nil {
		return 0, 0, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("net.ipv4.ip_local_port_range: %q is not two ports", b)
	}
	if low, err = strconv.Atoi(f[0]); err == nil {
		high, err = strconv.Atoi(f[1])
	}
	if err != nil {
		return 0, 0, fmt.Errorf("net.ipv4.ip_local_port_range: %v", err)
	}
	return low, high, nil
}
