package server

import (
	"fmt"
	"io"
	goruntime "runtime"

	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/util/compatibility"
	basecompatibility "k8s.io/component-base/compatibility"

	"github.com/aagen-dev/aagen/runtime/buildinfo"
)

// reportedVersion is the Kubernetes effective version of k8s.io/apiserver (which decides
// which features and APIs the library enables) reporting the server's own build in
// /version instead of component-base's link-time variables, which only Kubernetes' own
// release builds set (elsewhere they read v0.0.0-master+$Format:%H$).
type reportedVersion struct {
	basecompatibility.EffectiveVersion
	build buildinfo.Info
}

// newEffectiveVersion returns the effective version the server runs with.
func newEffectiveVersion(build buildinfo.Info) basecompatibility.EffectiveVersion {
	return reportedVersion{EffectiveVersion: compatibility.DefaultBuildEffectiveVersion(), build: build}
}

// Info is served at /version: gitVersion is the server's own version; major and minor
// stay the Kubernetes version of the API machinery it is built on, as for any Kubernetes
// component, so that clients comparing them (kubectl's skew check) see a Kubernetes
// version there.
func (v reportedVersion) Info() *apimachineryversion.Info {
	info := v.EffectiveVersion.Info()
	if info == nil {
		info = &apimachineryversion.Info{}
	}
	out := *info
	out.GitVersion = v.build.Version
	out.GitCommit = v.build.Revision
	out.GitTreeState = ""
	if v.build.Revision != "" {
		out.GitTreeState = "clean"
		if v.build.Modified {
			out.GitTreeState = "dirty"
		}
	}
	out.BuildDate = v.build.Time
	out.GoVersion = v.build.GoVersion
	out.Compiler = goruntime.Compiler
	out.Platform = goruntime.GOOS + "/" + goruntime.GOARCH
	return &out
}

// printVersion writes what --version prints: the server's version on the first line,
// then the aagen, Go and Kubernetes versions it was built with.
func printVersion(w io.Writer, name string, build buildinfo.Info) {
	fmt.Fprintf(w, "%s %s\n", name, build.Version)
	fmt.Fprintf(w, "aagen %s\n", build.Aagen)
	if build.Revision != "" {
		state := "clean"
		if build.Modified {
			state = "dirty"
		}
		fmt.Fprintf(w, "revision %s (%s)\n", build.Revision, state)
	}
	if build.GoVersion != "" {
		fmt.Fprintf(w, "go %s\n", build.GoVersion)
	}
	ev := compatibility.DefaultBuildEffectiveVersion()
	fmt.Fprintf(w, "kubernetes %s\n", ev.BinaryVersion())
}
