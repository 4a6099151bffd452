// Package faults injects network faults between the processes of the end-to-end tests: a
// loopback TCP proxy in front of one address that passes traffic, holds it (a partition:
// connections stay open, nothing arrives, nothing is reset, and what was sent arrives once
// the partition heals, as TCP's retransmissions would deliver it) or delays it (a slow
// link or member).
package faults

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Proxy forwards connections from its own loopback address to a target address.
type Proxy struct {
	ln     net.Listener
	target string
	// senderHeader, when set, names an HTTP request header that identifies who opened a
	// connection (etcd's peers send X-Server-From); connections from a blocked sender are
	// held.
	senderHeader string

	mu      sync.Mutex
	held    bool
	delay   time.Duration
	blocked map[string]bool
	conns   map[net.Conn]struct{}
	closed  bool
	wg      sync.WaitGroup
}

// Listen starts a proxy on a free port of 127.0.0.1 that forwards to target (host:port).
func Listen(target string) (*Proxy, error) {
	return listen(target, "")
}

// ListenHTTP is Listen for HTTP/1 traffic whose requests carry senderHeader, naming the
// sender; Block holds the connections of one sender only.
func ListenHTTP(target, senderHeader string) (*Proxy, error) {
	return listen(target, senderHeader)
}

func listen(target, senderHeader string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, senderHeader: senderHeader, blocked: map[string]bool{}, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Hold stops delivering bytes in both directions on every connection, old and new, until
// Heal: the connections stay open and what is sent meanwhile is delivered after Heal.
func (p *Proxy) Hold() { p.set(func() { p.held = true }) }

// Block holds the connections whose sender (see ListenHTTP) is from, until Heal.
func (p *Proxy) Block(from string) { p.set(func() { p.blocked[from] = true }) }

// Delay delivers every chunk of bytes d after it was read, in both directions.
func (p *Proxy) Delay(d time.Duration) { p.set(func() { p.delay = d }) }

// Heal ends Hold, Block and Delay.
func (p *Proxy) Heal() {
	p.set(func() { p.held, p.delay, p.blocked = false, 0, map[string]bool{} })
}

func (p *Proxy) set(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f()
}

// Close stops the proxy and closes its connections.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c)
	}
}

// track registers c for Close; false if the proxy is closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) serve(client net.Conn) {
	defer p.wg.Done()
	if !p.track(client) {
		return
	}
	defer client.Close()
	// A held proxy accepts connections but does not reach the target yet, as a partition
	// lets nothing through.
	for p.isHeld("") {
		if !p.sleep(10 * time.Millisecond) {
			return
		}
	}
	var sender string
	var head []byte
	if p.senderHeader != "" {
		var err error
		sender, head, err = p.readSender(client)
		if err != nil {
			return
		}
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(server) {
		return
	}
	defer server.Close()
	done := make(chan struct{}, 2)
	go func() { p.pipe(server, io.MultiReader(bytes.NewReader(head), client), sender); done <- struct{}{} }()
	go func() { p.pipe(client, server, sender); done <- struct{}{} }()
	<-done
	_ = client.Close()
	_ = server.Close()
	<-done
}

// readSender reads the first request's head from c and returns the sender header's value
// and the bytes read, which must still be forwarded.
func (p *Proxy) readSender(c net.Conn) (string, []byte, error) {
	var buf bytes.Buffer
	r := bufio.NewReader(io.TeeReader(c, &buf))
	req, err := http.ReadRequest(r)
	if err != nil {
		return "", nil, err
	}
	// The tee has read what bufio buffered beyond the head too; forward all of it.
	return req.Header.Get(p.senderHeader), buf.Bytes(), nil
}

// chunk is bytes read from one side, with the time they were read.
type chunk struct {
	data []byte
	at   time.Time
}

// pipe copies src to dst, holding or delaying the bytes as the proxy's state says. A
// reader goroutine stamps each chunk, so that a delay adds latency without limiting
// throughput.
func (p *Proxy) pipe(dst io.Writer, src io.Reader, sender string) {
	chunks := make(chan chunk, 1024)
	stopped := make(chan struct{})
	defer close(stopped)
	go func() {
		defer close(chunks)
		for {
			buf := make([]byte, 32<<10)
			n, err := src.Read(buf)
			if n > 0 {
				select {
				case chunks <- chunk{data: buf[:n], at: time.Now()}:
				case <-stopped:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	for ch := range chunks {
		for p.isHeld(sender) {
			if !p.sleep(10 * time.Millisecond) {
				return
			}
		}
		if d := p.currentDelay(); d > 0 {
			if wait := time.Until(ch.at.Add(d)); wait > 0 && !p.sleep(wait) {
				return
			}
		}
		if _, err := dst.Write(ch.data); err != nil {
			return
		}
	}
}

func (p *Proxy) isHeld(sender string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held || (sender != "" && p.blocked[sender])
}

func (p *Proxy) currentDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.delay
}

// sleep waits d; false if the proxy was closed meanwhile.
func (p *Proxy) sleep(d time.Duration) bool {
	time.Sleep(d)
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}
