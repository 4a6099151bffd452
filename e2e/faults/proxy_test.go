package faults

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

func dial(t *testing.T, p *Proxy) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, bufio.NewReader(c)
}

// roundTrip sends line and waits up to timeout for its echo; it returns how long it took,
// or false if nothing came back in time.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, line string, timeout time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	if _, err := fmt.Fprintln(c, line); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	got, err := r.ReadString('\n')
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return 0, false
		}
		t.Fatal(err)
	}
	if strings.TrimSpace(got) != line {
		t.Fatalf("echo %q, sent %q", got, line)
	}
	return time.Since(start), true
}

func TestProxyHoldDelayHeal(t *testing.T) {
	p, err := Listen(echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, r := dial(t, p)
	if _, ok := roundTrip(t, c, r, "pass", 5*time.Second); !ok {
		t.Fatal("no echo through a passing proxy")
	}

	// Held: nothing arrives, the connection stays open, and the bytes arrive after Heal.
	p.Hold()
	if _, err := fmt.Fprintln(c, "held"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if got, err := r.ReadString('\n'); err == nil {
		t.Fatalf("echo %q through a held proxy", got)
	}
	c2, r2 := dial(t, p) // a new connection is accepted but gets nothing through either
	if _, ok := roundTrip(t, c2, r2, "new", 300*time.Millisecond); ok {
		t.Fatal("a new connection got through a held proxy")
	}
	p.Heal()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r.ReadString('\n'); err != nil || got != "held\n" {
		t.Fatalf("after Heal: %q, %v", got, err)
	}
	_ = c2.SetReadDeadline(time.Now().Add(5 * time.Second))
	if got, err := r2.ReadString('\n'); err != nil || got != "new\n" {
		t.Fatalf("new connection after Heal: %q, %v", got, err)
	}

	// Delayed: each direction adds the delay.
	p.Delay(150 * time.Millisecond)
	if took, ok := roundTrip(t, c, r, "slow", 5*time.Second); !ok || took < 300*time.Millisecond {
		t.Fatalf("delayed round trip took %s (echoed %v), want at least 300ms", took, ok)
	}
	p.Heal()
	if took, ok := roundTrip(t, c, r, "fast", 5*time.Second); !ok || took > 150*time.Millisecond {
		t.Fatalf("round trip after Heal took %s (echoed %v)", took, ok)
	}
}

func TestProxyBlockSender(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "hello "+r.Header.Get("X-Server-From"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	p, err := ListenHTTP(ln.Addr().String(), "X-Server-From")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	p.Block("a")
	get := func(from string) (string, error) {
		req, _ := http.NewRequest("GET", "http://"+p.Addr()+"/", nil)
		req.Header.Set("X-Server-From", from)
		client := &http.Client{Timeout: 500 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}
	if got, err := get("b"); err != nil || got != "hello b" {
		t.Errorf("sender b: %q, %v", got, err)
	}
	if got, err := get("a"); err == nil {
		t.Errorf("blocked sender a got an answer: %q", got)
	}
	p.Heal()
	if got, err := get("a"); err != nil || got != "hello a" {
		t.Errorf("sender a after Heal: %q, %v", got, err)
	}
}
