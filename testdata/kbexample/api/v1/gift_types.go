package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// GiftSpec is what a visitor leaves behind: free-form data kept as sent, the way a
// CustomResourceDefinition keeps it.
type GiftSpec struct {
	// From is who left the gift.
	// +optional
	From string `json:"from,omitempty"`

	// Card is any JSON object; unknown fields in it are kept.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	Card *runtime.RawExtension `json:"card,omitempty"`

	// Wrapped is a Kubernetes object (apiVersion, kind, metadata), kept as sent except
	// for its metadata, which is pruned to the fields of object metadata.
	// +optional
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:EmbeddedResource
	Wrapped *runtime.RawExtension `json:"wrapped,omitempty"`

	// Tags label the gift: lower-case words of at most 8 letters.
	// +optional
	// +kubebuilder:validation:items:MaxLength=8
	// +kubebuilder:validation:items:Pattern=`^[a-z]+$`
	Tags []string `json:"tags,omitempty"`

	// Ribbon is tied around the gift.
	// +optional
	// +kubebuilder:default={color: red, widthCm: 2}
	Ribbon *Ribbon `json:"ribbon,omitempty"`
}

// Ribbon is a ribbon.
type Ribbon struct {
	// Color of the ribbon.
	// +optional
	Color string `json:"color,omitempty"`
	// WidthCm is its width in centimetres.
	// +optional
	WidthCm int32 `json:"widthCm,omitempty"`
}

// +kubebuilder:object:root=true

// Gift is the Schema for the gifts API
type Gift struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GiftSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// GiftList contains a list of Gift
type GiftList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gift `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Gift{}, &GiftList{})
}
