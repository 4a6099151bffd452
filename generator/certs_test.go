package generator

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/aagen-dev/aagen/generator/emit"
)

// TestDeployCerts checks the pipeline's deploy-certs step: it creates the serving and etcd
// material emit.Deploy renders, keeps what the module already has, and makes none with
// cert-manager.
func TestDeployCerts(t *testing.T) {
	dir := t.TempDir()
	certs, err := deployCerts(dir, "shop-apiserver", emit.DeployOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if certs.Serving == nil || len(certs.Serving.CACert) == 0 || certs.Etcd == nil {
		t.Fatalf("material %+v: want a serving CA and the etcd StatefulSet's certificates", certs)
	}
	for _, f := range append(certs.Serving.Files, certs.Etcd.Files...) {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Content, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	again, err := deployCerts(dir, "shop-apiserver", emit.DeployOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Serving.CACert, certs.Serving.CACert) {
		t.Error("a second run issued a new CA instead of keeping the module's")
	}
	if none, err := deployCerts(t.TempDir(), "shop-apiserver", emit.DeployOptions{CertManager: true}); err != nil || none.Serving != nil || none.Etcd != nil {
		t.Errorf("with cert-manager: %+v, %v; want no material", none, err)
	}
}
