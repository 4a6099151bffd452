package generator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aagen-dev/aagen/generator/emit"
	"github.com/aagen-dev/aagen/generator/load"
	"github.com/aagen-dev/aagen/runtime/atomicfile"
)

// The run cache lets a generate whose inputs and outputs have not changed since the last
// successful run stop before loading anything with types: a no-op regeneration costs a go
// list and a parse of import blocks, less than one package load.
//
// A successful run records in <module>/.aagen/generate.json a digest of everything that
// decides its outputs — this aagen binary (path, size and modification time), the options,
// and every file it reads: the Go files of the packages the patterns match and of the
// module's packages they import (load.ListSources), go.mod and go.sum — together with the
// digest of every file in the directories it writes (generated files, user-owned files and
// anything else there) and of the user-owned files it created elsewhere, and the warnings
// it printed. A later run skips everything only when the same binary with the same options
// finds exactly those files with exactly those contents, and no new file in those places;
// it prints the recorded warnings again. Anything else (an edited type, a deleted or
// hand-edited generated file, a stray file in a generated directory, a changed go.mod)
// makes a full run, which rewrites the record.

const cacheFile = ".aagen/generate.json"

type runRecord struct {
	Tool       string            `json:"tool"`
	Options    string            `json:"options"`
	ServerName string            `json:"serverName"`
	Warnings   []string          `json:"warnings,omitempty"`
	Files      map[string]string `json:"files"`
}

// cacheKey is what identifies a run apart from the files: the binary and the options that
// decide the outputs. An empty tool means the run cannot be identified and is not cached.
func cacheKey(o Options) (tool, options string) {
	opts, err := json.Marshal(struct {
		ServerName, GeneratedDir string
		Runtime                  RuntimeRef
		Backends                 []string
		Deploy                   emit.DeployOptions
	}{o.ServerName, o.GeneratedDir, o.Runtime, o.Backends, o.Deploy})
	if err != nil {
		return "", ""
	}
	exe, err := os.Executable()
	if err != nil {
		return "", ""
	}
	st, err := os.Stat(exe)
	if err != nil {
		return "", ""
	}
	sum := sha256.Sum256(opts)
	return fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano()), hex.EncodeToString(sum[:])
}

// runFiles lists the module-relative files a run depends on and owns: every Go file in
// the source directories, go.mod and go.sum, every file under the output directories, and
// extra.
func runFiles(src *load.Sources, outDirs, extra []string) ([]string, error) {
	set := map[string]bool{"go.mod": true, "go.sum": true}
	rel := func(p string) (string, bool) {
		r, err := filepath.Rel(src.ModuleDir, p)
		if err != nil || strings.HasPrefix(r, "..") {
			return "", false
		}
		return filepath.ToSlash(r), true
	}
	for _, d := range src.Dirs {
		entries, err := os.ReadDir(d)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".go") {
				// A source of a module replaced by a directory outside this one is recorded
				// by its relative path too (../lib/pkg/types.go).
				if r, err := filepath.Rel(src.ModuleDir, filepath.Join(d, e.Name())); err == nil {
					set[filepath.ToSlash(r)] = true
				}
			}
		}
	}
	for _, d := range outDirs {
		err := filepath.WalkDir(filepath.Join(src.ModuleDir, filepath.FromSlash(d)), func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil
				}
				return err
			}
			if !e.IsDir() {
				if r, ok := rel(p); ok {
					set[r] = true
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	for _, f := range extra {
		set[f] = true
	}
	out := make([]string, 0, len(set))
	for f := range set {
		out = append(out, f)
	}
	sort.Strings(out)
	return out, nil
}

// digest is the SHA-256 of the module-relative file f and its permission bits, or
// "missing": a file whose mode changed (a private key made readable by others, which a
// run makes 0600 again) makes a full run.
func digest(moduleDir, f string) string {
	abs := filepath.Join(moduleDir, filepath.FromSlash(f))
	data, err := os.ReadFile(abs)
	if err != nil {
		return "missing"
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "missing"
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("%s %o", hex.EncodeToString(sum[:]), fi.Mode().Perm())
}

// upToDate returns the last successful run's record when it recorded exactly what is
// there now, or nil.
func upToDate(src *load.Sources, o Options, outDirs []string) *runRecord {
	moduleDir := src.ModuleDir
	files, err := runFiles(src, outDirs, nil)
	if err != nil {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(moduleDir, cacheFile))
	if err != nil {
		return nil
	}
	var rec runRecord
	if err := json.Unmarshal(data, &rec); err != nil {
		return nil
	}
	tool, opts := cacheKey(o)
	if tool == "" || rec.Tool != tool || rec.Options != opts {
		return nil
	}
	for _, f := range files {
		if _, ok := rec.Files[f]; !ok {
			return nil // a file the last run did not see
		}
	}
	for f, sum := range rec.Files {
		if digest(moduleDir, f) != sum {
			return nil
		}
	}
	return &rec
}

// record writes the run record after a successful run (errors only cost the next run its
// shortcut, so they are returned for the log, never fatal).
func record(moduleDir string, o Options, serverName string, warnings []string, files []string) error {
	tool, opts := cacheKey(o)
	if tool == "" {
		return nil
	}
	digests := make(map[string]string, len(files))
	for _, f := range files {
		digests[f] = digest(moduleDir, f)
	}
	data, err := json.MarshalIndent(runRecord{Tool: tool, Options: opts, ServerName: serverName, Warnings: warnings, Files: digests}, "", " ")
	if err != nil {
		return err
	}
	path := filepath.Join(moduleDir, cacheFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, 0o644)
}

// forget removes the run record (before a run writes, so that a run interrupted halfway
// is never taken as up to date).
func forget(moduleDir string) {
	_ = os.Remove(filepath.Join(moduleDir, cacheFile))
}

// recordRun records a successful run for the run cache (see cache.go).
func recordRun(src *load.Sources, o Options, outDirs []string, res *Result, written []emit.File) error {
	var owned []string
	for _, f := range written {
		owned = append(owned, f.Path)
	}
	files, err := runFiles(src, outDirs, owned)
	if err != nil {
		return err
	}
	return record(src.ModuleDir, o, res.ServerName, diagnostics(res.Warnings), files)
}
