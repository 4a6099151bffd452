package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/crosspkg/pkg/common"
	"example.com/extlib"
)

// CrateSpec defines the desired state of Crate.
type CrateSpec struct {
	// Label is printed on the crate.
	Label common.Label `json:"label"`

	// Limits bound what the crate may hold.
	Limits extlib.Limits `json:"limits"`
}

// CrateStatus defines the observed state of Crate.
type CrateStatus struct {
	// Packed is set once the crate is packed.
	// +optional
	Packed bool `json:"packed,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status

// Crate is the Schema for the crates API.
type Crate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CrateSpec   `json:"spec,omitempty"`
	Status CrateStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// CrateList contains a list of Crate.
type CrateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Crate `json:"items"`
}
