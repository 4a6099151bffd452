package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// WorkerSpec defines the desired state of Worker: the pods of the guestbook's background
// workers, in the types of k8s.io/api and apimachinery.
type WorkerSpec struct {
	// Template is the pod every worker runs.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// Resources are the resources of the whole pool of workers.
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// Selector selects the workers' pods.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// MaxUnavailable is how many workers may be down at once: a number or a percentage.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`

	// Config is handed to the workers as it is.
	// +optional
	Config runtime.RawExtension `json:"config,omitempty"`
}

// WorkerParent is a guestbook that accepted a worker.
type WorkerParent struct {
	// Name is the guestbook's name.
	// +required
	Name string `json:"name"`
}

// WorkerStatus defines the observed state of Worker.
type WorkerStatus struct {
	// Parents are the guestbooks that accepted the worker (required, as in gateway-api's
	// route status: a status nobody has written yet has none).
	// +required
	Parents []WorkerParent `json:"parents"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Worker is the Schema for the workers API
type Worker struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WorkerSpec   `json:"spec,omitempty"`
	Status WorkerStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// WorkerList contains a list of Worker
type WorkerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Worker `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Worker{}, &WorkerList{})
}
