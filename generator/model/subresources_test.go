package model_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aagen-dev/aagen/generator/model"
)

// subresourceTypes are a body and a view for the Widget of goodKind.
const subresourceTypes = `
type RestartRequest struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	Reason string ` + "`json:\"reason,omitempty\"`" + `
}

type WidgetSize struct {
	metav1.TypeMeta ` + "`json:\",inline\"`" + `
	Size int32 ` + "`json:\"size\"`" + `
}

type NotAnObject struct{ A string }
`

func withSubresources(markers ...string) map[string]string {
	kind := strings.Replace(goodKind, "// +genclient\n", "// +genclient\n// "+strings.Join(markers, "\n// ")+"\n", 1)
	return map[string]string{"apis/shop/v1/doc.go": docGo, "apis/shop/v1/types.go": kind + subresourceTypes}
}

func TestSubresources(t *testing.T) {
	m, warns, err := build(t, module(t, withSubresources(
		"+aagen:subresource:action:name=restart,input=RestartRequest",
		"+aagen:subresource:view:name=size,type=WidgetSize,update=true",
		"+aagen:subresource:stream:name=log",
		"+aagen:subresource:connection:name=console",
		"+aagen:subresource:action:name=approve,input=RestartRequest,output=Status",
	)))
	if err != nil {
		t.Fatal(err)
	}
	k := m.AllKinds()[0]
	var got []model.Subresource
	for i, s := range k.Subresources {
		if s.Pos.Line != 6+i {
			t.Errorf("subresource %s at %v, want line %d", s.Name, s.Pos, 6+i)
		}
		s.Pos.Filename, s.Pos.Line, s.Pos.Column, s.Pos.Offset = "", 0, 0, 0
		got = append(got, s)
	}
	want := []model.Subresource{
		{Type: model.Action, Name: "restart", Input: "RestartRequest"},
		{Type: model.View, Name: "size", Object: "WidgetSize", Writable: true},
		{Type: model.Stream, Name: "log"},
		{Type: model.Connection, Name: "console"},
		{Type: model.Action, Name: "approve", Input: "RestartRequest", Output: "Status"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("subresources:\n got %+v\nwant %+v", got, want)
	}
	if ts := m.Groups[0].Versions[0].SubresourceTypes(); strings.Join(ts, ",") != "RestartRequest,WidgetSize" {
		t.Errorf("SubresourceTypes: %v", ts)
	}
	// console is not one of kube-apiserver's long-running subresources: a warning says so.
	others, proto := splitProtobuf(warns)
	if len(others) != 1 || !strings.Contains(others[0], "widgets/console are cut after kube-apiserver's --request-timeout") ||
		!strings.Contains(others[0], "types.go:9:") {
		t.Errorf("warnings: %v", others)
	}
	// The view's WidgetSize is a root of the protobuf messages too: its Size field is reported.
	if len(proto) != 2 || !strings.Contains(proto[1], "WidgetSize.Size has the name of a protobuf method") {
		t.Errorf("protobuf warnings: %q", proto)
	}
	if g := (model.Subresource{Name: "port-forward"}).GoName(); g != "PortForward" {
		t.Errorf("GoName: %s", g)
	}
}

func TestSubresourceErrors(t *testing.T) {
	cases := []struct {
		name    string
		markers []string
		want    string
	}{
		{"no name", []string{"+aagen:subresource:stream"}, "types.go:6:1: +aagen:subresource:stream on Widget: no name"},
		{"bad name", []string{"+aagen:subresource:stream:name=Log"}, `"Log" is not a valid subresource name`},
		{"built in", []string{"+aagen:subresource:stream:name=status"}, `subresource "status" is declared twice or is built in`},
		{"twice", []string{"+aagen:subresource:stream:name=log", "+aagen:subresource:connection:name=log"}, `types.go:7:1: +aagen:subresource:connection on Widget: subresource "log" is declared twice`},
		{"no input", []string{"+aagen:subresource:action:name=restart"}, "no input type\n\tfix: add input=<type>"},
		{"unknown type", []string{"+aagen:subresource:action:name=restart,input=Nope"}, `input type "Nope" is not a struct of package v1 embedding metav1.TypeMeta`},
		{"not an object", []string{"+aagen:subresource:view:name=size,type=NotAnObject"}, `view type "NotAnObject" is not a struct of package v1 embedding metav1.TypeMeta`},
		{"kind as body", []string{"+aagen:subresource:action:name=restart,input=WidgetList"}, "WidgetList is a kind or a kind's list"},
		{"bad update", []string{"+aagen:subresource:view:name=size,type=WidgetSize,update=yes"}, `update="yes"`},
		{"unknown argument", []string{"+aagen:subresource:view:name=size,typ=WidgetSize"}, `unknown argument "typ"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := build(t, module(t, withSubresources(c.markers...)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("want an error containing %q, got:\n%v", c.want, err)
			}
		})
	}
}

// TestSubresourcesOnMultiVersionKindRefused: a kind defined in two versions cannot have
// imperative subresources yet (README): an error at the marker with a fix.
func TestSubresourcesOnMultiVersionKindRefused(t *testing.T) {
	files := withSubresources("+aagen:subresource:stream:name=log")
	files["apis/shop/v1/types.go"] = strings.Replace(files["apis/shop/v1/types.go"], "// +genclient\n", "// +genclient\n// +kubebuilder:storageversion\n", 1)
	files["apis/shop/v1beta1/doc.go"] = strings.Replace(docGo, "package v1", "package v1beta1", 1)
	files["apis/shop/v1beta1/types.go"] = strings.Replace(goodKind, "package v1", "package v1beta1", 1)
	_, _, err := build(t, module(t, files))
	if err == nil || !strings.Contains(err.Error(), "Widget has imperative subresources but is defined in 2 versions; subresources of multi-version kinds are not supported yet") ||
		!strings.Contains(err.Error(), "fix: define the kind in one version") {
		t.Errorf("want the multi-version refusal with its fix, got:\n%v", err)
	}
}
