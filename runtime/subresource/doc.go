// Package subresource serves the imperative subresources of a kind, next to the storage
// package registry builds: actions, views, streams and connections, each a k8s.io/apiserver
// REST storage under "<plural>/<name>", so that discovery, OpenAPI, authentication,
// delegated authorization, admission and audit treat them like any built-in subresource.
//
//   - An Action is POST <plural>/<name>/<sub> with a body of a registered type (like
//     pods/eviction): the user's function gets a copy of the stored object and the
//     body, may change the object (the change is stored as an update of the object,
//     validated and versioned like any other) and returns the response.
//   - A View is GET (and with Set, PUT and PATCH) of another representation of the
//     object, the way /scale is one.
//   - A Stream is GET that writes a chunked response as the user's function produces it,
//     ?follow=true keeping it open until the client goes away, like pods/log.
//   - A Connection is a bidirectional stream over an upgraded connection, like pods/attach
//     and pods/exec: the websocket channel protocol v5.channel.k8s.io that kubectl and
//     client-go's websocket executor speak (stdin, stdout, stderr, error and resize channels).
//
// Streams and connections write straight to the connection, without a buffer of their own:
// a client that stops reading blocks the writer (TCP flow control) instead of growing the
// server's memory, and a write that cannot complete within WriteTimeout ends the stream.
// Both end when the server begins its graceful shutdown (Drain), so that open streams
// do not hold it up until its shutdown timeout.
package subresource
