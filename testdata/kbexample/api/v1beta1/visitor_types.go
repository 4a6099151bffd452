package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VisitorSpec defines the desired state of Visitor
// +kubebuilder:validation:XValidation:rule="self.guestbook != 'spam'",message="spam is not a guestbook",fieldPath=.guestbook
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.email) || self.email == oldSelf.email",message="email is immutable"
type VisitorSpec struct {
	// Guestbook is the name of the guestbook the visitor signed.
	// +kubebuilder:validation:Required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Guestbook string `json:"guestbook"`

	// Comment is what the visitor wrote.
	// +optional
	// +kubebuilder:validation:MaxLength=280
	Comment string `json:"comment,omitempty"`

	// Rating is how many stars the visitor gave: 1 to 5.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=6
	// +kubebuilder:validation:ExclusiveMaximum=true
	Rating int32 `json:"rating,omitempty"`

	// PartySize is how many came along, counted in pairs.
	// +optional
	// +kubebuilder:validation:MultipleOf=2
	PartySize int32 `json:"partySize,omitempty"`

	// Role is Guest or Host.
	// +optional
	// +kubebuilder:default=Guest
	// +kubebuilder:validation:Enum=Guest;Host
	Role string `json:"role,omitempty"`

	// Email is how to reach the visitor; it cannot be changed.
	// +optional
	// +kubebuilder:validation:Format=email
	Email string `json:"email,omitempty"`

	// Tags are the visitor's interests.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	Tags []string `json:"tags,omitempty"`

	// Languages maps language codes to fluency.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=2
	Languages map[string]string `json:"languages,omitempty"`

	// Nickname is what the visitor likes to be called; v1beta1 allows at most 8 bytes.
	// +optional
	// +kubebuilder:validation:MaxLength=8
	Nickname string `json:"nickname,omitempty"`

	// Badge is printed on the visitor's badge; v1beta1 defaults it to "visitor".
	// +optional
	// +kubebuilder:default=visitor
	Badge string `json:"badge,omitempty"`
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
// +kubebuilder:resource:shortName=vis,categories={all,webapp},singular=visitor
// +kubebuilder:printcolumn:name="Guestbook",type=string,JSONPath=`.spec.guestbook`
// +kubebuilder:printcolumn:name="Rating",type=integer,JSONPath=`.spec.rating`,description="Stars, 1 to 5."
// +kubebuilder:printcolumn:name="Email",type=string,JSONPath=`.spec.email`,priority=1

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
