package e2e

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// crdOracle is the peer "like a CRD" is measured against: CRDs that controller-gen wrote
// from the same Go types, installed unchanged on a real kube-apiserver (cluster.KubeVersion,
// its own etcd), with the namespace "guests" the comparisons write into.
type crdOracle struct {
	admin *rest.Config
	// crds holds the installed CRDs by plural resource name.
	crds map[string]*apiextensionsv1.CustomResourceDefinition
}

// startCRDOracle starts a control plane and installs the CRDs of crdDir (controller-gen's
// output directory) whose plural is one of plurals; a plural with no CRD fails the test.
// Every version of each CRD answers a list before it returns.
func startCRDOracle(t *testing.T, crdDir string, plurals ...string) *crdOracle {
	t.Helper()
	cp, _ := startControlPlane(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	o := &crdOracle{admin: cp.Admin, crds: map[string]*apiextensionsv1.CustomResourceDefinition{}}
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		crd, err := cluster.ReadCRD(f)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(plurals, crd.Spec.Names.Plural) {
			o.crds[crd.Spec.Names.Plural] = crd
		}
	}
	for _, p := range plurals {
		if o.crds[p] == nil {
			names, _ := os.ReadDir(crdDir)
			var have []string
			for _, n := range names {
				have = append(have, n.Name())
			}
			t.Fatalf("controller-gen wrote no CRD for %s into %s (it wrote %s)", p, crdDir, strings.Join(have, ", "))
		}
	}
	if _, err := kubernetes.NewForConfigOrDie(cp.Admin).CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guests"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn := dynamic.NewForConfigOrDie(cp.Admin)
	var installed []*apiextensionsv1.CustomResourceDefinition
	for _, p := range plurals {
		installed = append(installed, o.crds[p].DeepCopy())
	}
	for _, note := range cluster.MakeInstallable(installed) {
		t.Log(note)
	}
	for _, crd := range installed {
		p := crd.Spec.Names.Plural
		cluster.InstallCRD(t, ctx, cp.Admin, crd)
		for _, v := range crd.Spec.Versions {
			gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: v.Name, Resource: p}
			if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
				_, err := dyn.Resource(gvr).Namespace("guests").List(ctx, metav1.ListOptions{})
				return err == nil, nil
			}); err != nil {
				t.Fatalf("the CRD's %s never answered: %v", gvr, err)
			}
		}
	}
	return o
}

// schema returns the OpenAPI schema controller-gen wrote for version v of the CRD of plural,
// failing the test when there is none.
func (o *crdOracle) schema(t *testing.T, plural, v string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	for _, cv := range o.crds[plural].Spec.Versions {
		if cv.Name == v && cv.Schema != nil && cv.Schema.OpenAPIV3Schema != nil {
			return cv.Schema.OpenAPIV3Schema
		}
	}
	t.Fatalf("controller-gen's CRD of %s has no schema for %s", plural, v)
	return nil
}

// controllerGenCRDs runs controller-gen on the packages paths of the module at dir (the
// oracle's CRDs of the user's types, written before aagen touches the module; controller-gen
// exiting non-zero fails the test) and returns the CRDs of files (<group>_<plural>.yaml),
// failing the test unless each has one version, with a schema.
func controllerGenCRDs(t *testing.T, dir, paths string, files ...string) []*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crdDir := t.TempDir()
	run(t, dir, cluster.ControllerGenBinary(t), "crd", "paths="+paths, "output:crd:dir="+crdDir)
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		crd, err := cluster.ReadCRD(filepath.Join(crdDir, f))
		if err != nil {
			t.Fatal(err)
		}
		if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Schema == nil || crd.Spec.Versions[0].Schema.OpenAPIV3Schema == nil {
			t.Fatalf("controller-gen's CRD %s has versions %+v; want one with a schema", f, crd.Spec.Versions)
		}
		out = append(out, crd)
	}
	return out
}
