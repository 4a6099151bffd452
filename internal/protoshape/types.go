// Package protoshape holds Go types shaped like k8s.io/api's (apps/v1 Deployment and its
// list, core/v1 ResourceRequirements, ConfigMap, PodDNSConfig and part of
// PodSecurityContext), with the same protobuf tags, and the protobuf methods aagen's emitter
// generates for them (zz_generated.protobuf.go). Its tests compare their bytes with
// k8s.io/api's own generated.pb.go. Regenerate with
// `go test ./generator/protobuf -run TestProtobufShapeGolden -update`.
package protoshape

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type Deployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Spec   DeploymentSpec   `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
	Status DeploymentStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

type DeploymentSpec struct {
	Replicas                *int32                 `json:"replicas,omitempty" protobuf:"varint,1,opt,name=replicas"`
	Selector                *metav1.LabelSelector  `json:"selector" protobuf:"bytes,2,opt,name=selector"`
	Template                corev1.PodTemplateSpec `json:"template" protobuf:"bytes,3,opt,name=template"`
	Strategy                DeploymentStrategy     `json:"strategy,omitempty" protobuf:"bytes,4,opt,name=strategy"`
	MinReadySeconds         int32                  `json:"minReadySeconds,omitempty" protobuf:"varint,5,opt,name=minReadySeconds"`
	RevisionHistoryLimit    *int32                 `json:"revisionHistoryLimit,omitempty" protobuf:"varint,6,opt,name=revisionHistoryLimit"`
	Paused                  bool                   `json:"paused,omitempty" protobuf:"varint,7,opt,name=paused"`
	ProgressDeadlineSeconds *int32                 `json:"progressDeadlineSeconds,omitempty" protobuf:"varint,9,opt,name=progressDeadlineSeconds"`
}

type DeploymentStrategyType string

type DeploymentStrategy struct {
	Type          DeploymentStrategyType   `json:"type,omitempty" protobuf:"bytes,1,opt,name=type,casttype=DeploymentStrategyType"`
	RollingUpdate *RollingUpdateDeployment `json:"rollingUpdate,omitempty" protobuf:"bytes,2,opt,name=rollingUpdate"`
}

type RollingUpdateDeployment struct {
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty" protobuf:"bytes,1,opt,name=maxUnavailable"`
	MaxSurge       *intstr.IntOrString `json:"maxSurge,omitempty" protobuf:"bytes,2,opt,name=maxSurge"`
}

// DeploymentStatus declares its fields in k8s.io/api's order, which is not the numbers'.
type DeploymentStatus struct {
	ObservedGeneration  int64                 `json:"observedGeneration,omitempty" protobuf:"varint,1,opt,name=observedGeneration"`
	Replicas            int32                 `json:"replicas,omitempty" protobuf:"varint,2,opt,name=replicas"`
	UpdatedReplicas     int32                 `json:"updatedReplicas,omitempty" protobuf:"varint,3,opt,name=updatedReplicas"`
	ReadyReplicas       int32                 `json:"readyReplicas,omitempty" protobuf:"varint,7,opt,name=readyReplicas"`
	AvailableReplicas   int32                 `json:"availableReplicas,omitempty" protobuf:"varint,4,opt,name=availableReplicas"`
	UnavailableReplicas int32                 `json:"unavailableReplicas,omitempty" protobuf:"varint,5,opt,name=unavailableReplicas"`
	TerminatingReplicas *int32                `json:"terminatingReplicas,omitempty" protobuf:"varint,9,opt,name=terminatingReplicas"`
	Conditions          []DeploymentCondition `json:"conditions,omitempty" protobuf:"bytes,6,rep,name=conditions"`
	CollisionCount      *int32                `json:"collisionCount,omitempty" protobuf:"varint,8,opt,name=collisionCount"`
}

type DeploymentConditionType string

type DeploymentCondition struct {
	Type               DeploymentConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=DeploymentConditionType"`
	Status             corev1.ConditionStatus  `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	LastUpdateTime     metav1.Time             `json:"lastUpdateTime,omitempty" protobuf:"bytes,6,opt,name=lastUpdateTime"`
	LastTransitionTime metav1.Time             `json:"lastTransitionTime,omitempty" protobuf:"bytes,7,opt,name=lastTransitionTime"`
	Reason             string                  `json:"reason,omitempty" protobuf:"bytes,4,opt,name=reason"`
	Message            string                  `json:"message,omitempty" protobuf:"bytes,5,opt,name=message"`
}

type DeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []Deployment `json:"items" protobuf:"bytes,2,rep,name=items"`
}

type ResourceName string

type ResourceList map[ResourceName]resource.Quantity

type ResourceRequirements struct {
	Limits   ResourceList    `json:"limits,omitempty" protobuf:"bytes,1,rep,name=limits,casttype=ResourceList,castkey=ResourceName"`
	Requests ResourceList    `json:"requests,omitempty" protobuf:"bytes,2,rep,name=requests,casttype=ResourceList,castkey=ResourceName"`
	Claims   []ResourceClaim `json:"claims,omitempty" protobuf:"bytes,3,opt,name=claims"`
}

type ResourceClaim struct {
	Name    string `json:"name" protobuf:"bytes,1,opt,name=name"`
	Request string `json:"request,omitempty" protobuf:"bytes,2,opt,name=request"`
}

type ConfigMap struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Immutable  *bool             `json:"immutable,omitempty" protobuf:"varint,4,opt,name=immutable"`
	Data       map[string]string `json:"data,omitempty" protobuf:"bytes,2,rep,name=data"`
	BinaryData map[string][]byte `json:"binaryData,omitempty" protobuf:"bytes,3,rep,name=binaryData"`
}

type ConfigMapList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	Items []ConfigMap `json:"items" protobuf:"bytes,2,rep,name=items"`
}

type PodDNSConfig struct {
	Nameservers []string             `json:"nameservers,omitempty" protobuf:"bytes,1,rep,name=nameservers"`
	Searches    []string             `json:"searches,omitempty" protobuf:"bytes,2,rep,name=searches"`
	Options     []PodDNSConfigOption `json:"options,omitempty" protobuf:"bytes,3,rep,name=options"`
}

type PodDNSConfigOption struct {
	Name  string  `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	Value *string `json:"value,omitempty" protobuf:"bytes,2,opt,name=value"`
}

// PodSecurityContext has the fields of core/v1's numbered 2 to 5 (its others are pointers
// and slices, not written when unset).
type PodSecurityContext struct {
	RunAsUser          *int64  `json:"runAsUser,omitempty" protobuf:"varint,2,opt,name=runAsUser"`
	RunAsNonRoot       *bool   `json:"runAsNonRoot,omitempty" protobuf:"varint,3,opt,name=runAsNonRoot"`
	SupplementalGroups []int64 `json:"supplementalGroups,omitempty" protobuf:"varint,4,rep,name=supplementalGroups"`
	FSGroup            *int64  `json:"fsGroup,omitempty" protobuf:"varint,5,opt,name=fsGroup"`
}

// Gauge has no k8s.io/api counterpart: it covers the encodings no type above has (float64,
// float32, uint32, uint64, uint16, int16, uint8, int8, bytes, maps of scalars and messages, repeated
// doubles), for the round trip.
type Gauge struct {
	Ratio    float64           `json:"ratio"`
	Small    float32           `json:"small"`
	Count    uint32            `json:"count"`
	Big      uint64            `json:"big"`
	Blob     []byte            `json:"blob,omitempty"`
	Weights  map[string]int32  `json:"weights,omitempty"`
	Flags    map[string]bool   `json:"flags,omitempty"`
	Samples  []float64         `json:"samples,omitempty"`
	Offset   *float64          `json:"offset,omitempty"`
	Children map[string]Gauge2 `json:"children,omitempty"`
	Negative int32             `json:"negative"`
	Port     uint16            `json:"port"`
	Delta    int16             `json:"delta"`
	Tiny     int8              `json:"tiny"`
	Octet    uint8             `json:"octet"`
}

// Gauge2 is a message reached only as a map value.
type Gauge2 struct {
	Name string `json:"name"`
}
