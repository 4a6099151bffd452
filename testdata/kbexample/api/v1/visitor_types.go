package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VisitorSpec defines the desired state of Visitor
type VisitorSpec struct {
	// Guestbook is the name of the guestbook the visitor signed.
	Guestbook string `json:"guestbook"`

	// Comment is what the visitor wrote.
	// +optional
	Comment string `json:"comment,omitempty"`
}

// VisitorStatus defines the observed state of Visitor
type VisitorStatus struct {
	// Approved is set once a moderator approved the comment.
	// +optional
	Approved bool `json:"approved,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:selectablefield:JSONPath=.spec.guestbook
// +kubebuilder:printcolumn:name="Guestbook",type=string,JSONPath=`.spec.guestbook`
// +kubebuilder:storageversion

// Visitor is the Schema for the visitors API
type Visitor struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   VisitorSpec   `json:"spec,omitempty"`
	Status VisitorStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// VisitorList contains a list of Visitor
type VisitorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Visitor `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Visitor{}, &VisitorList{})
}
