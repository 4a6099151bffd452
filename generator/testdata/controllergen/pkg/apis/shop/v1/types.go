package v1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="app.kubernetes.io/part-of=shop",annotations="docs=https://example.com"
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +k8s:prerelease-lifecycle-gen:introduced=1.30
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec WidgetSpec `json:"spec" protobuf:"bytes,2,opt,name=spec"`
}

// +kubebuilder:object:root=true
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// +kubebuilder:validation:ExactlyOneOf=http;grpc
// +kubebuilder:title=Spec
type WidgetSpec struct {
	// +kubebuilder:validation:Minimum:=1
	// +kubebuilder:default:=3
	// +kubebuilder:example=4
	Size int32 `json:"size,omitempty"`
	// +kubebuilder:default=forty-two
	// +k8s:maxLength=16
	// +k8s:immutable
	// +nullable
	Name string `json:"name,omitempty"`
	// +kubebuilder:default={from: Same}
	// +kubebuilder:externalDocs:url="https://example.com",description="namespaces"
	Namespaces *Namespaces `json:"namespaces,omitempty"`
	// +kubebuilder:default={{name: a, port: 80},{name: b, port: 443}}
	// +listType=map
	// +listMapKey=name
	// +patchStrategy=merge
	// +patchMergeKey=name
	Ports []Port `json:"ports,omitempty" patchStrategy:"merge" patchMergeKey:"name"`
	// +kubebuilder:validation:items:MaxLength=8
	// +kubebuilder:validation:items:Pattern=`^[a-z]+$`
	// +optional
	Tags []string `json:"tags,omitempty"`
	// +k8s:required
	// +k8s:format=k8s-short-name
	Owner string `json:"owner"`
	// +optional
	HTTP *string `json:"http,omitempty"`
	// +optional
	GRPC *string `json:"grpc,omitempty"`
}

type Namespaces struct {
	From string `json:"from,omitempty"`
}

type Port struct {
	Name string `json:"name"`
	Port int32  `json:"port"`
}
