// Package common holds types the API packages of this module share; it is not an API
// version package itself (no +groupName), so its markers reach a kind only through the
// fields that use its types.
package common

// Label is printed on a crate.
// +kubebuilder:validation:XValidation:rule="!has(self.code) || self.text != self.code",message="text must differ from code"
type Label struct {
	// Text is what the label says.
	// +kubebuilder:validation:MaxLength=12
	Text string `json:"text"`

	// Code is the label's machine-readable code.
	// +optional
	// +kubebuilder:validation:Pattern=`^[a-z]+-[0-9]+$`
	Code string `json:"code,omitempty"`

	// Color is the label's colour.
	// +optional
	// +kubebuilder:default=green
	// +kubebuilder:validation:Enum=red;green;blue
	Color string `json:"color,omitempty"`

	// FontSize is the size of the label's text in points.
	// +optional
	// +kubebuilder:validation:Minimum=6
	FontSize int32 `json:"fontSize,omitempty"`

	// Finish is the label's surface finish.
	// +optional
	Finish Finish `json:"finish,omitempty"`
}

// Finish is how a label's surface is finished. Its constants are documented values
// (+enum): the server publishes them as the enum and takes other values too, as a CRD
// does (controller-gen ignores +enum).
// +enum
type Finish string

const (
	// FinishMatte is a matte finish.
	FinishMatte Finish = "Matte"
	// FinishGloss is a glossy finish.
	FinishGloss Finish = "Gloss"
)
