// Package buildinfo says which version a binary is: the version of a generated server
// (its module's version, or one set at link time) and the version of aagen it was made
// with. Both come from the Go build information embedded in every module-mode binary
// (runtime/debug.ReadBuildInfo); the two link-time strings below fill the gaps it leaves.
package buildinfo

import (
	"runtime/debug"
	"strings"
)

// Module is aagen's module path.
const Module = "github.com/aagen-dev/aagen"

// DevVersion is reported when no version is known: a build of a working tree that is not
// at a tagged release (Go reports "(devel)" for it).
const DevVersion = "v0.0.0-dev"

// Link-time versions, empty unless set with
//
//	go build -ldflags "-X github.com/aagen-dev/aagen/runtime/buildinfo.serverVersion=v1.2.3"
//
// They are never written by the program.
var (
	// serverVersion overrides the main module's version as the server's own version.
	serverVersion string
	// aagenVersion is the version of aagen that built the server; `aagen up` sets it to
	// its own version, so that a server built against a local aagen checkout (a replace
	// to a directory, which carries no version) reports the aagen that built it.
	aagenVersion string
)

// AagenVersionLinkFlag returns the -ldflags -X argument that records version as the aagen
// version of the binary being built.
func AagenVersionLinkFlag(version string) string {
	return "-X " + Module + "/runtime/buildinfo.aagenVersion=" + version
}

// Info is what a binary knows of its own build.
type Info struct {
	// Version is the binary's own version: for a generated server, its module's version.
	Version string
	// Aagen is the version of aagen: aagen's own when the binary is aagen, else the
	// version of aagen's runtime it links.
	Aagen string
	// Revision is the version-control revision the binary was built from, if known.
	Revision string
	// Modified reports uncommitted changes in that revision's working tree.
	Modified bool
	// Time is the revision's commit time (RFC 3339), if known.
	Time string
	// GoVersion is the Go toolchain that built the binary.
	GoVersion string
}

// Read returns the running binary's build information.
func Read() Info {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return FromBuildInfo(info, serverVersion, aagenVersion)
}

// FromBuildInfo derives Info from Go's build information and the link-time versions (empty
// when not set). A link-time version wins over the build information: it is what a
// release build says on purpose. Without one, the main module's version is used unless it
// is "(devel)" or empty; then the version is DevVersion, with the revision (and ".dirty"
// for uncommitted changes) as semver build metadata, e.g. v0.0.0-dev+0123456789ab.dirty.
func FromBuildInfo(info *debug.BuildInfo, linkedServer, linkedAagen string) Info {
	out := Info{Version: DevVersion, Aagen: DevVersion}
	if info == nil {
		if linkedServer != "" {
			out.Version = linkedServer
		}
		if linkedAagen != "" {
			out.Aagen = linkedAagen
		}
		return out
	}
	out.GoVersion = info.GoVersion
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			out.Revision = s.Value
		case "vcs.modified":
			out.Modified = s.Value == "true"
		case "vcs.time":
			out.Time = s.Value
		}
	}
	own := moduleVersion(&info.Main)
	switch {
	case linkedServer != "":
		out.Version = linkedServer
	case own != "":
		out.Version = own
	default:
		out.Version = devVersion(out.Revision, out.Modified)
	}
	switch {
	case linkedAagen != "":
		out.Aagen = linkedAagen
	case info.Main.Path == Module:
		// aagen itself (or a test of it): its own version, as its main module's.
		out.Aagen = out.Version
	default:
		for _, d := range info.Deps {
			if d.Path == Module {
				if v := moduleVersion(d); v != "" {
					out.Aagen = v
				}
			}
		}
	}
	return out
}

// moduleVersion is m's version, following a replace by another module version; empty when
// unknown: "(devel)", a replace by a directory, or the zero pseudo-version a requirement
// on an unpublished module carries.
func moduleVersion(m *debug.Module) string {
	if m.Replace != nil {
		m = m.Replace
	}
	v := m.Version
	if v == "" || v == "(devel)" || strings.HasPrefix(v, "v0.0.0-00010101000000-") {
		return ""
	}
	return v
}

// devVersion is DevVersion with the revision (shortened to 12 characters, as Go's
// pseudo-versions do) and a dirty mark as build metadata.
func devVersion(revision string, modified bool) string {
	var meta []string
	if revision != "" {
		meta = append(meta, revision[:min(12, len(revision))])
	}
	if modified {
		meta = append(meta, "dirty")
	}
	if len(meta) == 0 {
		return DevVersion
	}
	return DevVersion + "+" + strings.Join(meta, ".")
}
