package conformance

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"testing"
)

// TestToolModulesMatchE2E: the tool modules the command builds are the ones the end-to-end
// tests build (e2e/tools), so the oracle is the same release in both.
func TestToolModulesMatchE2E(t *testing.T) {
	for _, tl := range []tool{kubeAPIServerTool, controllerGenTool} {
		for _, name := range []string{"go.mod", "go.sum", "tools.go"} {
			want, err := os.ReadFile(filepath.Join("..", "..", "e2e", "tools", tl.module, name))
			if err != nil {
				t.Fatal(err)
			}
			got, err := toolModules.ReadFile(path.Join("toolmods", tl.module, name+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("internal/conformance/toolmods/%s/%s.txt differs from e2e/tools/%s/%s: copy it", tl.module, name, tl.module, name)
			}
		}
	}
}
