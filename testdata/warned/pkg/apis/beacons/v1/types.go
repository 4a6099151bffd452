package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SafeAuth takes credentials from a secret's key only.
type SafeAuth struct {
	// Type is the authentication scheme.
	// +optional
	Type string `json:"type,omitempty"`

	// Credentials names the secret's key.
	// +optional
	Credentials string `json:"credentials,omitempty"`
}

// FullAuth also reads credentials from a file on the server.
type FullAuth struct {
	SafeAuth `json:",inline"`

	// CredentialsFile is the file's path.
	// +optional
	CredentialsFile string `json:"credentialsFile,omitempty"`
}

// Endpoint is where a beacon is probed.
type Endpoint struct {
	// URL is the address probed.
	// +kubebuilder:validation:MaxLength=64
	URL string `json:"url"`

	// Auth authenticates the probe. BeaconSpec hides it behind its own.
	// +optional
	Auth *FullAuth `json:"auth,omitempty"`
}

// Window is when a beacon is probed.
type Window struct {
	// Start is the time of day probing starts.
	// +optional
	Start string `json:"start,omitempty"`

	// Note is about the window. BeaconSpec hides it behind its own.
	// +optional
	// +kubebuilder:validation:MaxLength=4
	Note string `json:"note,omitempty"`
}

// BeaconSpec defines the desired state of Beacon.
// +kubebuilder:validation:OneOf
type BeaconSpec struct {
	// Auth authenticates the probe, from a secret's key only: it hides the endpoint's.
	// +optional
	Auth *SafeAuth `json:"auth,omitempty"`

	// Note describes the beacon: it hides the window's.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	Note string `json:"note,omitempty"`

	Endpoint `json:",inline"`

	*Window `json:",inline"`
}

// BeaconStatus defines the observed state of Beacon.
type BeaconStatus struct {
	// Lit is set once the beacon answers.
	// +optional
	Lit bool `json:"lit,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Where",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Where",type=string,JSONPath=`.spec.note`

// Beacon is the Schema for the beacons API.
type Beacon struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   BeaconSpec   `json:"spec,omitempty"`
	Status BeaconStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// BeaconList contains a list of Beacon.
type BeaconList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Beacon `json:"items"`
}

// SignalSpec defines the desired state of Signal.
type SignalSpec struct {
	// Message is what the signal says.
	// +optional
	Message string `json:"message,omitempty"`
}

// +genclient
// +kubebuilder:object:root=true

// Signal is a kind without printer columns: kubectl get shows its name and age.
type Signal struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SignalSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// SignalList contains a list of Signal.
type SignalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Signal `json:"items"`
}
