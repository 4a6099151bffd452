package lazyfs

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// holdingName is the directory, at the top of the backing directory and hidden from the
// mount, where removed and replaced entries wait until their removal is durable.
const holdingName = ".lazyfs-held"

// mounted is the state of one mount: the page caches of the files and the journal of
// directory changes not yet durable.
type mounted struct {
	root string
	// rootIno is the backing directory's inode number (the mount's root has FUSE's 1).
	rootIno uint64
	mu      sync.Mutex
	files   map[uint64]*fileData // by backing inode number
	journal journal
}

// node is a file or directory of the mount; its backing path is its path in the tree.
type node struct {
	fs.Inode
	m *mounted
}

// handle is an open file: every handle of an inode shares its page cache.
type handle struct{ d *fileData }

var (
	_ fs.NodeLookuper    = (*node)(nil)
	_ fs.NodeGetattrer   = (*node)(nil)
	_ fs.NodeSetattrer   = (*node)(nil)
	_ fs.NodeOpener      = (*node)(nil)
	_ fs.NodeCreater     = (*node)(nil)
	_ fs.NodeReader      = (*node)(nil)
	_ fs.NodeWriter      = (*node)(nil)
	_ fs.NodeFsyncer     = (*node)(nil)
	_ fs.NodeReleaser    = (*node)(nil)
	_ fs.NodeAllocater   = (*node)(nil)
	_ fs.NodeMkdirer     = (*node)(nil)
	_ fs.NodeUnlinker    = (*node)(nil)
	_ fs.NodeRmdirer     = (*node)(nil)
	_ fs.NodeRenamer     = (*node)(nil)
	_ fs.NodeReaddirer   = (*node)(nil)
	_ fs.NodeStatfser    = (*node)(nil)
	_ fs.NodeFlusher     = (*node)(nil)
	_ fs.NodeWrapChilder = (*node)(nil)
)

func (n *node) isRoot() bool { return n.Root() == &n.Inode }

// rel is the node's path relative to the backing directory.
func (n *node) rel() string { return n.Path(n.Root()) }

func (n *node) path() string { return filepath.Join(n.m.root, n.rel()) }

// ino is the backing inode number.
func (n *node) ino() uint64 {
	if n.isRoot() {
		return n.m.rootIno
	}
	return n.StableAttr().Ino
}

func (n *node) WrapChild(ctx context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder { return ops }

// hidden says whether name in n is the holding directory.
func (n *node) hidden(name string) bool { return name == holdingName && n.isRoot() }

// attr fills out from st, with the size the page cache has. Callers hold m.mu.
func (m *mounted) attr(st *syscall.Stat_t, out *fuse.Attr) {
	out.FromStat(st)
	if d := m.files[st.Ino]; d != nil {
		d.mu.Lock()
		out.Size = uint64(d.size)
		out.Blocks = (out.Size + 511) / 512
		d.mu.Unlock()
	}
}

func (n *node) newChild(ctx context.Context, st *syscall.Stat_t) *fs.Inode {
	return n.NewInode(ctx, &node{m: n.m}, fs.StableAttr{Mode: st.Mode & syscall.S_IFMT, Ino: st.Ino})
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.ENOENT
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(n.path(), name), &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	n.m.mu.Lock()
	n.m.attr(&st, &out.Attr)
	n.m.mu.Unlock()
	return n.newChild(ctx, &st), 0
}

// stat reads the backing file's attributes: through its open descriptor when it has a page
// cache (an unlinked file has no path). Callers hold m.mu.
func (n *node) stat(st *syscall.Stat_t) error {
	if d := n.m.files[n.ino()]; d != nil && !n.IsDir() {
		return syscall.Fstat(d.fd, st)
	}
	return syscall.Lstat(n.path(), st)
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	var st syscall.Stat_t
	if err := n.stat(&st); err != nil {
		return fs.ToErrno(err)
	}
	n.m.attr(&st, &out.Attr)
	return 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if size, ok := in.GetSize(); ok {
		d, errno := n.m.openData(n.path(), n.ino())
		if errno != 0 {
			return errno
		}
		d.truncate(int64(size))
		n.m.release(d)
	}
	n.m.mu.Lock()
	path := n.path()
	if d := n.m.files[n.ino()]; d != nil && !n.IsDir() {
		path = "/proc/self/fd/" + strconv.Itoa(d.fd)
	}
	n.m.mu.Unlock()
	if mode, ok := in.GetMode(); ok {
		if err := syscall.Chmod(path, mode); err != nil {
			return fs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := os.Lchown(path, u, g); err != nil {
			return fs.ToErrno(err)
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if aok {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, ts, 0); err != nil {
			return fs.ToErrno(err)
		}
	}
	return n.Getattr(ctx, f, out)
}

// openData returns the page cache of the backing file at path (inode ino), opening it
// if it has none, and counts a handle on it.
func (m *mounted) openData(path string, ino uint64) (*fileData, syscall.Errno) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := m.files[ino]; d != nil {
		d.handles++
		return d, 0
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return m.adopt(fd, ino)
}

// adopt makes fd the backing descriptor of inode ino's page cache, or closes it when the
// inode has one, and counts a handle. Callers hold m.mu.
func (m *mounted) adopt(fd int, ino uint64) (*fileData, syscall.Errno) {
	if d := m.files[ino]; d != nil {
		_ = unix.Close(fd)
		d.handles++
		return d, 0
	}
	d, err := newFileData(fd, ino)
	if err != nil {
		_ = unix.Close(fd)
		return nil, fs.ToErrno(err)
	}
	d.handles = 1
	m.files[ino] = d
	return d, 0
}

// release drops a handle; a page cache with no handle and nothing unsynced is closed.
func (m *mounted) release(d *fileData) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d.handles--
	if d.handles > 0 {
		return
	}
	d.mu.Lock()
	dirty := d.dirty()
	d.mu.Unlock()
	if !dirty && m.files[d.ino] == d {
		delete(m.files, d.ino)
		_ = unix.Close(d.fd)
	}
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	d, errno := n.m.openData(n.path(), n.ino())
	if errno != 0 {
		return nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		d.truncate(0)
	}
	return &handle{d: d}, 0, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if n.hidden(name) {
		return nil, nil, 0, syscall.EPERM
	}
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	p := filepath.Join(n.path(), name)
	fd, err := unix.Open(p, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, mode)
	created := err == nil
	if err == unix.EEXIST && flags&syscall.O_EXCL == 0 {
		fd, err = unix.Open(p, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	}
	if err != nil {
		return nil, nil, 0, fs.ToErrno(err)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		return nil, nil, 0, fs.ToErrno(err)
	}
	if created {
		n.m.journal.add(&entryChange{kind: entryCreated, dirs: []uint64{n.ino()}, path: filepath.Join(n.rel(), name)})
	}
	d, errno := n.m.adopt(fd, st.Ino)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	if flags&syscall.O_TRUNC != 0 {
		d.truncate(0)
	}
	n.m.attr(&st, &out.Attr)
	return n.newChild(ctx, &st), &handle{d: d}, 0, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if n.hidden(name) {
		return nil, syscall.EPERM
	}
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	p := filepath.Join(n.path(), name)
	if err := syscall.Mkdir(p, mode); err != nil {
		return nil, fs.ToErrno(err)
	}
	n.m.journal.add(&entryChange{kind: entryCreated, dirs: []uint64{n.ino()}, path: filepath.Join(n.rel(), name)})
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return nil, fs.ToErrno(err)
	}
	n.m.attr(&st, &out.Attr)
	return n.newChild(ctx, &st), 0
}

// remove removes name from n (a file or an empty directory) into the holding directory.
func (n *node) remove(name string, dir bool) syscall.Errno {
	if n.hidden(name) {
		return syscall.ENOENT
	}
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	rel := filepath.Join(n.rel(), name)
	var st syscall.Stat_t
	if err := syscall.Lstat(n.m.journal.abs(rel), &st); err != nil {
		return fs.ToErrno(err)
	}
	isDir := st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	switch {
	case dir && !isDir:
		return syscall.ENOTDIR
	case !dir && isDir:
		return syscall.EISDIR
	case dir && !emptyDir(n.m.journal.abs(rel)):
		return syscall.ENOTEMPTY
	}
	held, err := n.m.journal.hold(rel)
	if err != nil {
		return fs.ToErrno(err)
	}
	n.m.journal.add(&entryChange{kind: entryRemoved, dirs: []uint64{n.ino()}, path: rel, held: held})
	return 0
}

func emptyDir(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	names, _ := f.Readdirnames(1)
	return len(names) == 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return n.remove(name, false) }

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno { return n.remove(name, true) }

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	if flags&^unix.RENAME_NOREPLACE != 0 {
		return syscall.EINVAL // RENAME_EXCHANGE and RENAME_WHITEOUT are not modelled
	}
	if n.hidden(name) || np.hidden(newName) {
		return syscall.EPERM
	}
	n.m.mu.Lock()
	defer n.m.mu.Unlock()
	j := &n.m.journal
	from, to := filepath.Join(n.rel(), name), filepath.Join(np.rel(), newName)
	var src, dst syscall.Stat_t
	if err := syscall.Lstat(j.abs(from), &src); err != nil {
		return fs.ToErrno(err)
	}
	srcDir := src.Mode&syscall.S_IFMT == syscall.S_IFDIR
	held := ""
	if err := syscall.Lstat(j.abs(to), &dst); err == nil {
		dstDir := dst.Mode&syscall.S_IFMT == syscall.S_IFDIR
		switch {
		case src.Ino == dst.Ino:
			return 0
		case flags&unix.RENAME_NOREPLACE != 0:
			return syscall.EEXIST
		case srcDir && !dstDir:
			return syscall.ENOTDIR
		case !srcDir && dstDir:
			return syscall.EISDIR
		case dstDir && !emptyDir(j.abs(to)):
			return syscall.ENOTEMPTY
		}
		if held, err = j.hold(to); err != nil {
			return fs.ToErrno(err)
		}
	}
	if err := syscall.Rename(j.abs(from), j.abs(to)); err != nil {
		if held != "" {
			_ = os.Rename(filepath.Join(j.holding, held), j.abs(to))
		}
		return fs.ToErrno(err)
	}
	dirs := []uint64{n.ino()}
	if np.ino() != n.ino() {
		dirs = append(dirs, np.ino())
	}
	j.add(&entryChange{kind: entryRenamed, dirs: dirs, path: from, target: to, held: held, isDir: srcDir})
	return 0
}

func (n *node) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	entries, err := os.ReadDir(n.path())
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	list := make([]fuse.DirEntry, 0, len(entries))
	for _, e := range entries {
		if n.hidden(e.Name()) {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		st := info.Sys().(*syscall.Stat_t)
		list = append(list, fuse.DirEntry{Name: e.Name(), Mode: st.Mode & syscall.S_IFMT, Ino: st.Ino})
	}
	return fs.NewListDirStream(list), 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.m.root, &st); err != nil {
		return fs.ToErrno(err)
	}
	out.FromStatfsT(&st)
	return 0
}

func (n *node) Read(ctx context.Context, f fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := f.(*handle)
	if !ok {
		return nil, syscall.EBADF
	}
	c, err := h.d.read(dest, off)
	if err != nil {
		return nil, fs.ToErrno(err)
	}
	return fuse.ReadResultData(dest[:c]), 0
}

func (n *node) Write(ctx context.Context, f fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	h, ok := f.(*handle)
	if !ok {
		return 0, syscall.EBADF
	}
	if err := h.d.write(data, off); err != nil {
		return 0, fs.ToErrno(err)
	}
	return uint32(len(data)), 0
}

func (n *node) Allocate(ctx context.Context, f fs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	h, ok := f.(*handle)
	if !ok {
		return syscall.EBADF
	}
	switch mode {
	case 0:
		h.d.allocate(int64(off), int64(size))
		return 0
	case unix.FALLOC_FL_KEEP_SIZE:
		return 0 // reserves space only: nothing a reader can see
	}
	return syscall.EOPNOTSUPP
}

// Fsync of a file writes its page cache; of a directory, makes the changes of its entries
// durable.
func (n *node) Fsync(ctx context.Context, f fs.FileHandle, flags uint32) syscall.Errno {
	if n.IsDir() {
		n.m.mu.Lock()
		defer n.m.mu.Unlock()
		n.m.journal.synced(n.ino())
		return 0
	}
	if h, ok := f.(*handle); ok {
		return fs.ToErrno(h.d.sync())
	}
	n.m.mu.Lock()
	d := n.m.files[n.ino()]
	n.m.mu.Unlock()
	if d == nil {
		return 0 // nothing cached
	}
	return fs.ToErrno(d.sync())
}

func (n *node) Flush(ctx context.Context, f fs.FileHandle) syscall.Errno { return 0 }

func (n *node) Release(ctx context.Context, f fs.FileHandle) syscall.Errno {
	if h, ok := f.(*handle); ok {
		n.m.release(h.d)
	}
	return 0
}
