package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/runtime/buildinfo"
)

func TestReportedVersion(t *testing.T) {
	build := buildinfo.Info{Version: "v1.2.3", Aagen: "v0.4.0", Revision: "0123456789abcdef", Modified: true, Time: "2026-11-23T05:00:00Z", GoVersion: "go1.26.0"}
	info := newEffectiveVersion(build).Info()
	if info.GitVersion != "v1.2.3" || info.GitCommit != "0123456789abcdef" || info.GitTreeState != "dirty" || info.BuildDate != "2026-11-23T05:00:00Z" || info.GoVersion != "go1.26.0" {
		t.Errorf("/version info: %+v", info)
	}
	if info.Major != "1" || info.Minor == "" || info.Minor == "0" {
		t.Errorf("major.minor should be the Kubernetes version of the library: %s.%s", info.Major, info.Minor)
	}
	var out bytes.Buffer
	printVersion(&out, "shop-apiserver", build)
	lines := strings.Split(out.String(), "\n")
	if lines[0] != "shop-apiserver v1.2.3" || lines[1] != "aagen v0.4.0" {
		t.Errorf("--version:\n%s", out.String())
	}
}
