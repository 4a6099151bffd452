package registry

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Bounds on the number of labels, annotations and finalizers of an object. Kubernetes
// itself bounds only the total size of annotations (256 KiB, apimachinery's
// ValidateAnnotations); the counts are unbounded there, and computing the managed fields of
// a write costs time that grows with the square of them (150,000 labels or 250,000
// finalizers cost 10 to 70 s of CPU, in kube-apiserver as here). These bounds are far
// above what an object carries in practice (labels and annotations in the tens,
// finalizers a handful), and keep that cost in milliseconds. A write over one is refused
// with 422 Invalid ("metadata.labels: Too many: 150000: must have at most 1000 items"),
// for a large body before its managed fields are computed (BodyInspector), for any body
// by validation. An update may keep an object that is already over a bound (written
// before it existed) as long as it does not add to the count, so that its finalizers can
// still be removed.
const (
	MaxLabels      = 1000
	MaxAnnotations = 1000
	MaxFinalizers  = 100
)

// metadataCounts returns the errors of counts over the bounds; old, if set, are the
// counts of the object before an update.
func metadataCounts(labels, annotations, finalizers int, old *[3]int) field.ErrorList {
	var errs field.ErrorList
	meta := field.NewPath("metadata")
	for i, c := range []struct {
		name string
		n    int
		max  int
	}{{"labels", labels, MaxLabels}, {"annotations", annotations, MaxAnnotations}, {"finalizers", finalizers, MaxFinalizers}} {
		if c.n > c.max && (old == nil || c.n > old[i]) {
			errs = append(errs, field.TooMany(meta.Child(c.name), c.n, c.max))
		}
	}
	return errs
}

// objectMetadataCounts returns the errors of o's counts over the bounds (of the change
// from old, when old is set).
func objectMetadataCounts(o, old metav1.Object) field.ErrorList {
	var prev *[3]int
	if old != nil {
		prev = &[3]int{len(old.GetLabels()), len(old.GetAnnotations()), len(old.GetFinalizers())}
	}
	return metadataCounts(len(o.GetLabels()), len(o.GetAnnotations()), len(o.GetFinalizers()), prev)
}
