package lazyfs

import (
	"sync"

	"golang.org/x/sys/unix"
)

// pageSize is the unit of the page cache.
const pageSize = 4096

// fileData is the page cache of one backing file (one inode): the pages written since its
// last fsync and its size as the processes on the mount see it. The backing file holds the
// durable content; fsync writes the pages and the size into it and syncs it.
type fileData struct {
	mu sync.Mutex
	// fd is the backing file, opened read-write. It keeps the inode alive (and so its
	// number unique) while the data exists, even after an unlink.
	fd int
	// ino is the backing inode number.
	ino uint64
	// size is the file's size as seen through the mount.
	size int64
	// visible is how much of the backing file's content the mount still sees: its size at
	// the last sync, lowered by every truncation since (a truncate-then-extend reads zeros,
	// not the old bytes).
	visible int64
	// pages are the pages written since the last sync, by page index.
	pages map[int64][]byte
	// sizeChanged is set when the size differs from the backing file's durable size.
	sizeChanged bool
	// handles counts the open file handles.
	handles int
}

func newFileData(fd int, ino uint64) (*fileData, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, err
	}
	return &fileData{fd: fd, ino: ino, size: st.Size, visible: st.Size, pages: map[int64][]byte{}}, nil
}

// dirty says whether the file has writes or a size not yet synced. Callers hold mu.
func (d *fileData) dirty() bool { return len(d.pages) > 0 || d.sizeChanged }

// unsyncedBytes is how many bytes of written data an unsynced state holds. Callers hold mu.
func (d *fileData) unsyncedBytes() int64 {
	var n int64
	for idx := range d.pages {
		n += min(pageSize, max(0, d.size-idx*pageSize))
	}
	return n
}

// loadPage returns page idx as the mount sees it: from the cache, or from the visible part
// of the backing file (zeros beyond it). Callers hold mu.
func (d *fileData) loadPage(idx int64) ([]byte, error) {
	if p, ok := d.pages[idx]; ok {
		return p, nil
	}
	p := make([]byte, pageSize)
	start := idx * pageSize
	if start < d.visible {
		want := min(pageSize, d.visible-start)
		for off := int64(0); off < want; {
			n, err := unix.Pread(d.fd, p[off:want], start+off)
			if err != nil {
				return nil, err
			}
			if n == 0 {
				break
			}
			off += int64(n)
		}
	}
	return p, nil
}

// read copies the content at off into dest and returns how many bytes it copied.
func (d *fileData) read(dest []byte, off int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	end := min(off+int64(len(dest)), d.size)
	n := 0
	for pos := off; pos < end; {
		idx := pos / pageSize
		p, err := d.loadPage(idx)
		if err != nil {
			return n, err
		}
		in := pos - idx*pageSize
		c := copy(dest[n:end-off], p[in:])
		n += c
		pos += int64(c)
	}
	return n, nil
}

// write puts data at off into the cache.
func (d *fileData) write(data []byte, off int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for n := 0; n < len(data); {
		pos := off + int64(n)
		idx := pos / pageSize
		p, err := d.loadPage(idx)
		if err != nil {
			return err
		}
		d.pages[idx] = p
		n += copy(p[pos-idx*pageSize:], data[n:])
	}
	if end := off + int64(len(data)); end > d.size {
		d.setSize(end)
	}
	return nil
}

// truncate sets the size: the bytes beyond it are gone, an extension reads zeros.
func (d *fileData) truncate(size int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.setSize(size)
}

// setSize sets the size. Callers hold mu.
func (d *fileData) setSize(size int64) {
	if size < d.size {
		d.visible = min(d.visible, size)
		for idx, p := range d.pages {
			switch start := idx * pageSize; {
			case start >= size:
				delete(d.pages, idx)
			case start+pageSize > size:
				clear(p[size-start:])
			}
		}
	}
	d.size = size
	d.sizeChanged = true
}

// allocate extends the size to off+length (fallocate mode 0; the space reads zeros).
func (d *fileData) allocate(off, length int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if end := off + length; end > d.size {
		d.setSize(end)
	}
}

// sync writes the cached pages and the size into the backing file and syncs it.
func (d *fileData) sync() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.dirty() {
		return unix.Fdatasync(d.fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(d.fd, &st); err != nil {
		return err
	}
	// Drop what a truncation hid before writing: a later extension must read zeros there.
	if d.visible < st.Size {
		if err := unix.Ftruncate(d.fd, d.visible); err != nil {
			return err
		}
	}
	for idx, p := range d.pages {
		start := idx * pageSize
		n := min(pageSize, d.size-start)
		for off := int64(0); off < n; {
			w, err := unix.Pwrite(d.fd, p[off:n], start+off)
			if err != nil {
				return err
			}
			off += int64(w)
		}
	}
	if err := unix.Ftruncate(d.fd, d.size); err != nil {
		return err
	}
	if err := unix.Fsync(d.fd); err != nil {
		return err
	}
	d.pages = map[int64][]byte{}
	d.visible, d.sizeChanged = d.size, false
	return nil
}
