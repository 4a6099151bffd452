package emit

import (
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// TestStoredVersion: the API reference labels as "storage" the version objects are written
// to etcd in: the hub's, or with an internal hub (sample-apiserver's layout) the group's
// storage version, which is not the hub; a backend kind is not stored at all.
func TestStoredVersion(t *testing.T) {
	g := &model.Group{Name: "shop.example.com"}
	internal := &model.Version{Group: g, Name: "__internal", Internal: true}
	v1 := &model.Version{Group: g, Name: "v1"}
	v2 := &model.Version{Group: g, Name: "v2"}
	g.Internal, g.Versions, g.StorageVersion = internal, []*model.Version{v2, v1}, v1
	r := &model.Resource{Group: g, Kind: "Widget"}
	hub := &model.Kind{Version: internal, Resource: r, Name: "Widget", Hub: true}
	k1 := &model.Kind{Version: v1, Resource: r, Name: "Widget"}
	k2 := &model.Kind{Version: v2, Resource: r, Name: "Widget"}
	r.Hub, r.Versions = hub, []*model.Kind{k2, k1}
	if !stored(k1) || stored(k2) || stored(hub) {
		t.Errorf("internal hub: stored v1 %v, v2 %v, hub %v; want only v1", stored(k1), stored(k2), stored(hub))
	}

	g2 := &model.Group{Name: "plain.example.com"}
	w1 := &model.Version{Group: g2, Name: "v1"}
	w2 := &model.Version{Group: g2, Name: "v2"}
	r2 := &model.Resource{Group: g2, Kind: "Gadget"}
	h1 := &model.Kind{Version: w1, Resource: r2, Name: "Gadget", Hub: true}
	h2 := &model.Kind{Version: w2, Resource: r2, Name: "Gadget"}
	r2.Hub, r2.Versions = h1, []*model.Kind{h2, h1}
	if !stored(h1) || stored(h2) {
		t.Errorf("version hub: stored v1 %v, v2 %v; want only v1", stored(h1), stored(h2))
	}
	r2.Backend = true
	if stored(h1) {
		t.Error("a backend kind is labelled as stored")
	}
}

// TestFieldConstraintsDocumentedEnum: the reference says a +enum type's constants are
// documented values, not checked, and a +kubebuilder:validation:Enum's are checked ("one of").
func TestFieldConstraintsDocumentedEnum(t *testing.T) {
	enum := model.Validation{Enum: []any{"Round", "Square"}}
	if got, want := strings.Join(fieldConstraints(model.FieldValidation{Validation: enum, OpenAPIEnum: true, DocumentedEnum: true}), "; "),
		"documented values (+enum, not checked): `\"Round\"`, `\"Square\"`"; got != want {
		t.Errorf("+enum alone: %q, want %q", got, want)
	}
	if got, want := strings.Join(fieldConstraints(model.FieldValidation{Validation: enum, OpenAPIEnum: true}), "; "),
		"one of `\"Round\"`, `\"Square\"`"; got != want {
		t.Errorf("+enum with +kubebuilder:validation:Enum: %q, want %q", got, want)
	}
}
