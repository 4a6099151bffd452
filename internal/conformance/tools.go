package conformance

import (
	"context"
	"embed"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/aagen-dev/aagen/e2e/cluster"
	"github.com/aagen-dev/aagen/internal/binbuild"
	"github.com/aagen-dev/aagen/internal/gocmd"
	"github.com/aagen-dev/aagen/runtime/atomicfile"
)

// The versions of the oracle's tools: e2e/cluster's, which checks them against the tool
// modules' go.mod; TestToolModulesMatchE2E checks that toolmods/ is a copy of e2e/tools.
const (
	KubeVersion          = cluster.KubeVersion
	ControllerGenVersion = cluster.ControllerGenVersion
)

// toolModules are the pinned tool modules (go.mod, go.sum and tools.go of e2e/tools/<name>,
// stored with a .txt suffix: a directory holding a go.mod is another module, which go:embed
// cannot reach). They are written out at run time and built with the go command, whose
// module cache downloads what go.sum pins.
//
//go:embed toolmods
var toolModules embed.FS

// tool is one binary the comparison needs.
type tool struct {
	module, pkg, name, version string
}

var (
	kubeAPIServerTool = tool{"kube-apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver", KubeVersion}
	controllerGenTool = tool{"controller-gen", "sigs.k8s.io/controller-tools/cmd/controller-gen", "controller-gen", ControllerGenVersion}
)

// DefaultBinDir is where the tools are built for a user: <user cache dir>/aagen/bin.
func DefaultBinDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "aagen", "bin"), nil
}

// binary returns the path of t in binDir as <name>-<version> (the names e2e/cluster uses in
// .cache/bin), building it from its pinned module first when it is not there.
func (t tool) binary(ctx context.Context, binDir string, log io.Writer) (string, error) {
	bin := filepath.Join(binDir, t.name+"-"+t.version)
	var start time.Time
	built, err := binbuild.Once(bin, func(tmp string) error {
		modDir := filepath.Join(binDir, "modules", t.module)
		if err := writeToolModule(t.module, modDir); err != nil {
			return err
		}
		fmt.Fprintf(log, "aagen conformance: building %s %s from Go modules into %s (minutes on a cold cache)\n", t.name, t.version, bin)
		start = time.Now()
		if _, err := (gocmd.Cmd{Args: []string{"build", "-o", tmp, t.pkg}, Dir: modDir}).Run(ctx); err != nil {
			return fmt.Errorf("building %s: %w", t.name, err)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	if built {
		fmt.Fprintf(log, "aagen conformance: built %s in %s\n", t.name, time.Since(start).Round(time.Second))
	}
	return bin, nil
}

// writeToolModule writes the pinned module of a tool (go.mod, go.sum, tools.go) into dir.
func writeToolModule(module, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"go.mod", "go.sum", "tools.go"} {
		data, err := toolModules.ReadFile(path.Join("toolmods", module, name+".txt"))
		if err != nil {
			return err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
