// Package extlib is a second module of the user's, which example.com/crosspkg requires
// through a replace directive (replace example.com/extlib => ./extlib): types shared
// with other projects, whose kubebuilder markers travel with them.
package extlib

// Limits bound what a container may hold.
// +kubebuilder:validation:XValidation:rule="!has(self.minWeight) || self.minWeight <= self.maxWeight",message="minWeight must not exceed maxWeight"
type Limits struct {
	// MaxWeight is the heaviest load allowed, in units of Unit.
	// +kubebuilder:validation:Minimum=1
	MaxWeight int64 `json:"maxWeight"`

	// MinWeight is the lightest load worth shipping.
	// +optional
	MinWeight int64 `json:"minWeight,omitempty"`

	// Unit is the unit of weight.
	// +optional
	// +kubebuilder:default=kg
	// +kubebuilder:validation:Enum=kg;lb
	Unit string `json:"unit,omitempty"`

	// Carrier is the code of the company that ships the load.
	// +optional
	// +kubebuilder:validation:MaxLength=4
	// +kubebuilder:validation:Pattern=`^[A-Z]+$`
	Carrier string `json:"carrier,omitempty"`
}
