// Package protobad has types the protobuf emitter cannot encode, each a root of its own in
// generator/protobuf's tests.
package protobad

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type Anything struct {
	metav1.TypeMeta `json:",inline"`
	Values          map[string]any `json:"values"`
}

type Clock struct {
	When time.Time `json:"when"`
}

type Nested struct {
	Inner Wrapper `json:"inner"`
}

type Wrapper struct {
	Matrix [][]string `json:"matrix"`
}

type Twice struct {
	A string `json:"a" protobuf:"bytes,1,opt,name=a"`
	B string `json:"b" protobuf:"bytes,1,opt,name=b"`
}

type Fine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	First             string `json:"first"`
	Added             int32  `json:"added"`
	Second            bool   `json:"second"`
}

type Pointers struct {
	Items []*Fine `json:"items"`
}

type PointerToSlice struct {
	Names *[]string `json:"names"`
}

type Anonymous struct {
	Point struct{ X int32 } `json:"point"`
}

type Stringer struct {
	Name string `json:"name"`
}

func (s Stringer) String() string { return s.Name }

type MapOfSlices struct {
	Extra map[string][]string `json:"extra"`
}

// Aliased reaches a struct and a string through aliases, which encode as what they name.
type Aliased struct {
	Inner FineAlias   `json:"inner"`
	Items []FineAlias `json:"items"`
	Name  NameAlias   `json:"name"`
}

type FineAlias = Fine

type NameAlias = string

// Several has three fields the encoding cannot carry, one of them in a struct it reaches.
type Several struct {
	When   time.Time         `json:"when"`
	Size   string            `json:"size"`
	Nested Wrapper           `json:"nested"`
	Fine   map[string]string `json:"fine"`
}

// TwoStringers reaches Stringer through two fields: one warning, not one per field.
type TwoStringers struct {
	A Stringer `json:"a"`
	B Stringer `json:"b"`
}
