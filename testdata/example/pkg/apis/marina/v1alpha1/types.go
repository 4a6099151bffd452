package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Boat is a vessel that berths in a namespace's part of the marina.
//
// +genclient
// +kubebuilder:resource:shortName=bt,categories=marina
// +kubebuilder:printcolumn:name=Dock,type=string,JSONPath=.spec.dock
// +kubebuilder:printcolumn:name=Length,type=integer,JSONPath=.spec.lengthMeters,description="Length overall, in metres."
// +kubebuilder:printcolumn:name=Phase,type=string,JSONPath=.status.phase
// +kubebuilder:printcolumn:name=Berth,type=integer,JSONPath=.status.berth,priority=1
// +kubebuilder:selectablefield:JSONPath=.spec.dock
// +aagen:subresource:action:name=depart,input=DepartureRequest
// +aagen:subresource:view:name=berth,type=BoatBerth,update=true
// +aagen:subresource:stream:name=log
// +aagen:subresource:connection:name=attach
type Boat struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the owner wants for the boat.
	Spec BoatSpec `json:"spec,omitempty"`
	// Status is what the harbour master last observed.
	// +optional
	Status BoatStatus `json:"status,omitempty"`
}

// BoatSpec is the desired state of a Boat.
//
// +kubebuilder:validation:XValidation:rule="!has(self.sails) || self.sails <= self.lengthMeters",message="a boat carries at most one sail per metre of length",fieldPath=.sails
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.hull) || has(self.hull) && self.hull == oldSelf.hull",message="hull cannot be changed",reason=FieldValueForbidden
type BoatSpec struct {
	// Dock is the name of the Dock the boat berths at.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9-]*$`
	Dock string `json:"dock"`
	// LengthMeters is the boat's length overall, in metres.
	// +kubebuilder:validation:Minimum=0
	LengthMeters int32 `json:"lengthMeters"`
	// Crew lists the people aboard.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=12
	Crew []string `json:"crew,omitempty"`
	// Sails is the number of sails; zero for motor boats.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	Sails *int32 `json:"sails,omitempty"`
	// Hull is what the hull is made of. It cannot be changed.
	// +optional
	// +kubebuilder:default="Fibreglass"
	Hull Hull `json:"hull,omitempty"`
	// Contact is the owner's email address.
	// +optional
	// +kubebuilder:validation:Format=email
	Contact string `json:"contact,omitempty"`
}

// Hull is the material of a boat's hull.
//
// +kubebuilder:validation:Enum=Wood;Steel;Fibreglass
type Hull string

// BoatStatus is the observed state of a Boat.
type BoatStatus struct {
	// Phase is Arriving, Berthed or Departed.
	// +optional
	// +kubebuilder:validation:Enum=Arriving;Berthed;Departed
	Phase string `json:"phase,omitempty"`
	// Berth is the berth number assigned at the dock.
	// +optional
	Berth int32 `json:"berth,omitempty"`
	// Conditions are the latest observations of the boat's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BoatList is a list of Boats.
type BoatList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Boat `json:"items"`
}

// DepartureRequest asks a boat to leave its berth: the body of POST boats/<name>/depart.
type DepartureRequest struct {
	metav1.TypeMeta `json:",inline"`

	// Destination is where the boat is heading.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Destination string `json:"destination,omitempty"`
}

// BoatBerth is where a boat lies: the view boats/<name>/berth. Writing it moves the boat.
type BoatBerth struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Dock is the name of the Dock the boat berths at.
	Dock string `json:"dock"`
	// Berth is the berth number at the dock.
	// +optional
	Berth int32 `json:"berth,omitempty"`
}

// Dock is a pier of the marina. Docks are shared by every namespace.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:resource:shortName=dk,categories=marina
// +kubebuilder:printcolumn:name=Berths,type=integer,JSONPath=.spec.berths
type Dock struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec describes the dock.
	Spec DockSpec `json:"spec,omitempty"`
}

// DockSpec describes a Dock.
type DockSpec struct {
	// Berths is the number of boats the dock holds.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=500
	Berths int32 `json:"berths"`
	// Depth is the water depth at the dock, e.g. "4.5m".
	// +optional
	// +default="3m"
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?m$`
	Depth string `json:"depth,omitempty"`
	// Amenities are the services the dock offers, by name.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Amenities map[string]string `json:"amenities,omitempty"`
}

// DockList is a list of Docks.
type DockList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Dock `json:"items"`
}

// Fleet is a group of identical boats sailing together. Its /scale subresource sets how
// many (kubectl scale, autoscalers).
//
// +genclient
// +kubebuilder:resource:shortName=fl,categories=marina
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name=Desired,type=integer,JSONPath=.spec.replicas
// +kubebuilder:printcolumn:name=Current,type=integer,JSONPath=.status.replicas
type Fleet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the fleet the owner wants.
	Spec FleetSpec `json:"spec,omitempty"`
	// Status is the fleet as last observed.
	// +optional
	Status FleetStatus `json:"status,omitempty"`
}

// FleetSpec is the desired state of a Fleet.
type FleetSpec struct {
	// Replicas is the number of boats the fleet should have.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Replicas *int32 `json:"replicas,omitempty"`
	// Class is the class of boat the fleet is made of, e.g. "dinghy".
	// +optional
	// +kubebuilder:validation:MaxLength=32
	Class string `json:"class,omitempty"`
}

// FleetStatus is the observed state of a Fleet.
type FleetStatus struct {
	// Replicas is the number of boats the fleet has.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector selects the fleet's boats by label, in string form.
	// +optional
	Selector string `json:"selector,omitempty"`
}

// FleetList is a list of Fleets.
type FleetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []Fleet `json:"items"`
}

// DockOccupancy is how full a Dock is: the server computes one for each Dock from the Docks
// and Boats it holds (as metrics-server computes its kinds), and stores nothing. It is
// read-only: get, list and watch.
//
// +genclient
// +genclient:nonNamespaced
// +genclient:readonly
// +aagen:backend
// +kubebuilder:resource:shortName=occ,categories=marina
// +kubebuilder:printcolumn:name=Berths,type=integer,JSONPath=.berths
// +kubebuilder:printcolumn:name=Occupied,type=integer,JSONPath=.occupied
// +kubebuilder:printcolumn:name=Free,type=integer,JSONPath=.free
// +kubebuilder:printcolumn:name=Boats,type=string,JSONPath=.boats,priority=1,description="The boats at the dock, as namespace/name."
// +kubebuilder:selectablefield:JSONPath=.full
type DockOccupancy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Berths is the number of berths of the dock.
	Berths int32 `json:"berths"`
	// Occupied is the number of boats at the dock.
	Occupied int32 `json:"occupied"`
	// Free is the number of free berths (negative when the dock is over-full).
	Free int32 `json:"free"`
	// Full is set when no berth is free.
	Full bool `json:"full"`
	// Boats are the boats at the dock, as namespace/name, sorted.
	// +optional
	// +listType=atomic
	Boats []string `json:"boats,omitempty"`
}

// DockOccupancyList is a list of DockOccupancies.
type DockOccupancyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	Items []DockOccupancy `json:"items"`
}
