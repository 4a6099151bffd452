package buildinfo

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	settings := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}, {Key: "vcs.time", Value: "2026-11-23T05:00:00Z"}}
	}
	aagenDep := func(version string, replace *debug.Module) []*debug.Module {
		return []*debug.Module{{Path: "k8s.io/apiserver", Version: "v0.37.2"}, {Path: Module, Version: version, Replace: replace}}
	}
	for _, tc := range []struct {
		name                string
		info                *debug.BuildInfo
		linkServer, linkAag string
		version, aagen      string
	}{
		{
			name:    "no build info",
			version: DevVersion, aagen: DevVersion,
		},
		{
			name:    "tagged server on a published aagen",
			info:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v1.2.3"}, Deps: aagenDep("v0.4.0", nil)},
			version: "v1.2.3", aagen: "v0.4.0",
		},
		{
			name:    "devel build with a revision, aagen replaced by a directory",
			info:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "(devel)"}, Settings: settings("0123456789abcdef0123", "true"), Deps: aagenDep("v0.0.0-00010101000000-000000000000", &debug.Module{Path: "../aagen"})},
			version: "v0.0.0-dev+0123456789ab.dirty", aagen: DevVersion,
		},
		{
			name:    "devel build without version control",
			info:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "(devel)"}},
			version: DevVersion, aagen: DevVersion,
		},
		{
			name:       "link-time versions win",
			info:       &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "v1.2.3+dirty"}, Deps: aagenDep("v0.0.0-00010101000000-000000000000", &debug.Module{Path: "../aagen"})},
			linkServer: "v1.2.4", linkAag: "v0.5.0-rc.1",
			version: "v1.2.4", aagen: "v0.5.0-rc.1",
		},
		{
			name:    "aagen replaced by another module version",
			info:    &debug.BuildInfo{Main: debug.Module{Path: "example.com/shop", Version: "(devel)"}, Deps: aagenDep("v0.4.0", &debug.Module{Path: "example.com/fork/aagen", Version: "v0.4.1-fork"})},
			version: DevVersion, aagen: "v0.4.1-fork",
		},
		{
			name:    "aagen itself",
			info:    &debug.BuildInfo{Main: debug.Module{Path: Module, Version: "v0.0.0-20261123050000-0123456789ab+dirty"}},
			version: "v0.0.0-20261123050000-0123456789ab+dirty", aagen: "v0.0.0-20261123050000-0123456789ab+dirty",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FromBuildInfo(tc.info, tc.linkServer, tc.linkAag)
			if got.Version != tc.version || got.Aagen != tc.aagen {
				t.Errorf("got version %q aagen %q, want %q and %q", got.Version, got.Aagen, tc.version, tc.aagen)
			}
		})
	}
}

func TestAagenVersionLinkFlag(t *testing.T) {
	if got, want := AagenVersionLinkFlag("v1.0.0"), "-X github.com/aagen-dev/aagen/runtime/buildinfo.aagenVersion=v1.0.0"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
