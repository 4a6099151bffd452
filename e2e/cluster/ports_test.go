package cluster

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: the ports FreePort returns lie outside the ephemeral range, are never
// returned twice, can be listened on, and are not what a listen on port 0 gets.
func TestFreePort(t *testing.T) {
	elow, ehigh, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for range 200 {
		port := FreePort(t)
		if port >= elow && port <= ehigh {
			t.Fatalf("port %d is in the ephemeral range %d-%d", port, elow, ehigh)
		}
		if seen[port] {
			t.Fatalf("port %d returned twice", port)
		}
		seen[port] = true
	}
	// Many listens on port 0 at once (each holds its port): none gets a port FreePort gave.
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for range 500 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
		if port := l.Addr().(*net.TCPAddr).Port; seen[port] {
			t.Fatalf("a listen on port 0 got port %d, which FreePort returned", port)
		}
	}
	port := FreePort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("listening on the port FreePort returned: %v", err)
	}
	_ = l.Close()
}

// TestPortPickerSkipsTakenAndEphemeralPorts: a picker whose range is all ephemeral has no
// port to give and says so; one whose only port is taken finds none free.
func TestPortPickerSkipsTakenAndEphemeralPorts(t *testing.T) {
	elow, _, err := ephemeralRange()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&portPicker{low: elow, high: elow + 10, given: map[int]bool{}}).take(); err == nil {
		t.Error("a picker of ephemeral ports only gave one")
	}
	port := FreePort(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got, err := (&portPicker{low: port, high: port + 1, given: map[int]bool{}}).take(); err == nil {
		t.Errorf("a picker whose one port is taken gave %d", got)
	}
}
