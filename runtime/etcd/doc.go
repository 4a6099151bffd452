// Package etcd runs a single-member etcd inside the current process.
//
// Generated aggregated API servers store their objects in etcd. A production
// deployment points them at an external etcd with --etcd-servers. For local
// development, tests and the standalone (--local) mode, Start launches etcd
// in-process through go.etcd.io/etcd/server/v3/embed, so that one binary and
// one data directory are all that is needed:
//
//	srv, err := etcd.Start(ctx, etcd.Config{Dir: "/var/lib/example/etcd"})
//	if err != nil {
//		return err
//	}
//	defer srv.Close()
//	storageConfig.Transport.ServerList = []string{srv.ClientURL()}
//
// The member opens no TCP port. Clients reach it through a unix socket in a
// fresh directory of mode 0700 (ClientURL returns "unix:///.../client.sock"),
// so only processes of the user that started it (and root) can read or write
// its keys; other local users get "permission denied". A single member has no
// peers, so it has no peer listener either. Its data lives in Config.Dir and
// survives restarts: starting again on the same directory reopens the existing
// member with its keys, behind a new socket.
//
// A data directory can be used by one Server at a time: Start holds a lock
// file (.lock) in it until Close, and refuses a directory that is in use
// instead of waiting for it.
//
// Every Server is independent; there is no package-level state, so several
// servers can run in one process (for example in parallel tests), each with its
// own directory and socket.
//
// etcd logs through zap. By default those logs are discarded; set
// Config.LogOutput to see them. Failures that happen after Start has returned
// are reported on Server.Err, which is what callers should watch, rather than
// the log.
package etcd
