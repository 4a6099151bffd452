package load

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestReferencedTypes follows kbexample's Worker into k8s.io/api and apimachinery: the types
// its pod template reaches are listed, those with a schema of their own are not followed,
// and neither the types packages' own types nor the standard library's are listed.
func TestReferencedTypes(t *testing.T) {
	res, err := Packages(context.Background(), filepath.Join("..", "..", "testdata", "kbexample"), []string{"./api/..."})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range ReferencedTypes(res.Packages) {
		got = append(got, n.String())
	}
	for _, want := range []string{
		"k8s.io/api/core/v1.PodTemplateSpec", "k8s.io/api/core/v1.PodSpec", "k8s.io/api/core/v1.Container",
		"k8s.io/api/core/v1.ResourceRequirements", "k8s.io/api/core/v1.Probe",
		"k8s.io/apimachinery/pkg/apis/meta/v1.LabelSelector", "k8s.io/apimachinery/pkg/apis/meta/v1.Time",
		"k8s.io/apimachinery/pkg/util/intstr.IntOrString", "k8s.io/apimachinery/pkg/runtime.RawExtension",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("%s is not listed", want)
		}
	}
	for _, not := range []string{"time.Time", "example.com/kbexample/api/v1.WorkerSpec"} {
		if slices.Contains(got, not) {
			t.Errorf("%s is listed", not)
		}
	}
}
