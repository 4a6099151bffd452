package registry

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMetadataCountsRefusedBeforeDecoding checks that a body with more labels,
// annotations or finalizers than the bounds (MaxLabels, MaxAnnotations, MaxFinalizers) is
// refused by the body inspector, in JSON and in protobuf, without the protobuf decoder
// running: 150,000 labels or 250,000 finalizers otherwise reach the managed fields, whose
// cost grows with the square of the count (10 to 70 s of CPU each).
func TestMetadataCountsRefusedBeforeDecoding(t *testing.T) {
	r := protoWidgetREST(t)
	labels := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("k%d", i)] = ""
		}
		return m
	}
	finalizers := func(n int) []string {
		l := make([]string, n)
		for i := range l {
			l[i] = "example.com/f"
		}
		return l
	}
	for _, c := range []struct {
		name string
		meta metav1.ObjectMeta
		want string
	}{
		{"labels", metav1.ObjectMeta{Name: "a", Labels: labels(150000)}, "metadata.labels: Too many: 150000: must have at most 1000 items"},
		{"annotations", metav1.ObjectMeta{Name: "a", Annotations: labels(150000)}, "metadata.annotations: Too many: 150000: must have at most 1000 items"},
		{"finalizers", metav1.ObjectMeta{Name: "a", Finalizers: finalizers(250000)}, "metadata.finalizers: Too many: 250000: must have at most 100 items"},
		{"at the bounds", metav1.ObjectMeta{Name: "a", Labels: labels(MaxLabels), Annotations: labels(MaxAnnotations), Finalizers: finalizers(MaxFinalizers)}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := &protoWidget{ObjectMeta: c.meta}
			jsonBody, err := json.Marshal(w)
			if err != nil {
				t.Fatal(err)
			}
			protoUnmarshals = 0
			for format, body := range map[string][]byte{"JSON": jsonBody, "protobuf": protoBody(t, w)} {
				f := FormatJSON
				if format == "protobuf" {
					f = FormatProtobuf
				}
				got := r.InspectBody("v1", body, f, InspectOptions{Limits: true}).OverLimits
				if c.want == "" {
					if len(got) != 0 {
						t.Errorf("%s: %v, want no error", format, got)
					}
					continue
				}
				if len(got) != 1 || !strings.Contains(got[0].Error(), c.want) {
					t.Errorf("%s: %v, want %q", format, got, c.want)
				}
			}
			if protoUnmarshals != 0 {
				t.Errorf("the protobuf decoder ran %d times", protoUnmarshals)
			}
		})
	}
}

// TestMetadataCountsInValidation checks the bounds for any body (a small one is not
// inspected), and that an update of an object already over a bound may go on as long as
// it does not add to the count (so that finalizers can be removed).
func TestMetadataCountsInValidation(t *testing.T) {
	over := &metav1.ObjectMeta{Finalizers: make([]string, MaxFinalizers+2)}
	if errs := objectMetadataCounts(over, nil); len(errs) != 1 || !strings.Contains(errs[0].Error(), "metadata.finalizers: Too many: 102: must have at most 100 items") {
		t.Errorf("create: %v", errs)
	}
	fewer := &metav1.ObjectMeta{Finalizers: make([]string, MaxFinalizers+1)}
	if errs := objectMetadataCounts(fewer, over); len(errs) != 0 {
		t.Errorf("an update removing a finalizer: %v", errs)
	}
	if errs := objectMetadataCounts(over, fewer); len(errs) != 1 {
		t.Errorf("an update adding a finalizer over the bound: %v", errs)
	}
	if errs := objectMetadataCounts(&metav1.ObjectMeta{Labels: map[string]string{"a": "b"}}, nil); len(errs) != 0 {
		t.Errorf("one label: %v", errs)
	}
}
