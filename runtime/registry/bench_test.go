package registry

// Benchmarks of the hot paths of a generated server, each next to its peer: what the
// handler of a CustomResourceDefinition does with the same object (unstructured, with
// k8s.io/apiextensions-apiserver's code). Each benchmark runs both in the same loop and
// reports aagen-ns/op, crd-ns/op and their ratio aagen/crd (below 1: aagen is faster):
//
//	go test -run '^$' -bench . -benchmem ./runtime/registry

import (
	"bytes"
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource/tableconvertor"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	jsonserializer "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	openapicommon "k8s.io/kube-openapi/pkg/common"

	"github.com/aagen-dev/aagen/runtime/typedjson"
)

// pair runs ours and peer alternately and reports both times and their ratio.
func pair(b *testing.B, ours, peer func() error) {
	b.Helper()
	var tOurs, tPeer time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if err := ours(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := peer(); err != nil {
			b.Fatal(err)
		}
		tOurs += t1.Sub(t0)
		tPeer += time.Since(t1)
		n++
	}
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(n), "aagen-ns/op")
	b.ReportMetric(float64(tPeer.Nanoseconds())/float64(n), "crd-ns/op")
	b.ReportMetric(float64(tOurs)/float64(tPeer), "aagen/crd")
}

var widgetGV = schema.GroupVersion{Group: "shop.example.com", Version: "v1"}

func widgetScheme(b *testing.B) *runtime.Scheme {
	b.Helper()
	s := runtime.NewScheme()
	s.AddKnownTypeWithName(widgetGV.WithKind("Widget"), &widget{})
	s.AddKnownTypeWithName(widgetGV.WithKind("WidgetList"), &widgetList{})
	metav1.AddToGroupVersion(s, widgetGV)
	return s
}

// widgets returns n objects, typed and as a CRD's handler holds them.
func widgets(b *testing.B, n int) (*widgetList, *unstructured.UnstructuredList) {
	b.Helper()
	typed := &widgetList{TypeMeta: metav1.TypeMeta{APIVersion: widgetGV.String(), Kind: "WidgetList"}, ListMeta: metav1.ListMeta{ResourceVersion: "12345"}}
	untyped := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": widgetGV.String(), "kind": "WidgetList", "metadata": map[string]any{"resourceVersion": "12345"}}}
	for i := range n {
		w := widget{
			TypeMeta: metav1.TypeMeta{APIVersion: widgetGV.String(), Kind: "Widget"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("widget-%05d", i), Namespace: "shop", UID: "6f0c1c1e-9a4f-4a57-9a8e-6b1f1d9b3a21",
				ResourceVersion: fmt.Sprint(1000 + i), Generation: 1, CreationTimestamp: metav1.NewTime(time.Unix(1_700_000_000, 0)),
				Labels: map[string]string{"shard": fmt.Sprint(i % 10), "app": "shop"},
				// As stored objects have them: one manager per writer.
				ManagedFields: []metav1.ManagedFieldsEntry{
					{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: widgetGV.String(), FieldsType: "FieldsV1",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:shard":{}}},"f:spec":{".":{},"f:color":{},"f:size":{},"f:weight":{},"f:shiny":{},"f:replicas":{},"f:Tags":{}}}`)}},
					{Manager: "widget-controller", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: widgetGV.String(), FieldsType: "FieldsV1", Subresource: "status",
						FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{".":{},"f:replicas":{},"f:selector":{}}}`)}},
				}},
			Spec:   widgetSpec{Color: "red", Size: int32(1 + i%20), Weight: 1.5, Shiny: i%2 == 0, Replicas: int32p(3), Tags: []string{"a", "b"}},
			Status: widgetStatus{Replicas: 3, Selector: "app=shop"},
		}
		typed.Items = append(typed.Items, w)
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&w)
		if err != nil {
			b.Fatal(err)
		}
		untyped.Items = append(untyped.Items, unstructured.Unstructured{Object: u})
	}
	return typed, untyped
}

// BenchmarkListEncode encodes a list of 1000 objects as JSON, as a list response does.
func BenchmarkListEncode(b *testing.B) {
	typed, untyped := widgets(b, 1000)
	codec := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, widgetScheme(b), widgetScheme(b), jsonserializer.SerializerOptions{})
	var buf bytes.Buffer
	pair(b, func() error {
		buf.Reset()
		return codec.Encode(typed, &buf)
	}, func() error {
		buf.Reset()
		return unstructured.UnstructuredJSONScheme.Encode(untyped, &buf)
	})
}

// BenchmarkDecode decodes one object from JSON, as a create or an update does: ours with
// the serializer of a generated server's groups (one parse, package typedjson), the CRD's
// with the unstructured JSON scheme (Unstructured's own decoding).
func BenchmarkDecode(b *testing.B) {
	scheme, data := decodeInput(b)
	meta := &parseCounter{}
	codec := typedjson.NewSerializer(jsonserializer.NewSerializerWithOptions(meta, scheme, scheme, jsonserializer.SerializerOptions{}), scheme)
	pair(b, func() error {
		_, _, err := codec.Decode(data, nil, &widget{})
		return err
	}, func() error {
		_, _, err := unstructured.UnstructuredJSONScheme.Decode(data, nil, &unstructured.Unstructured{})
		return err
	})
	meta.none(b)
}

// BenchmarkDecodeStrict decodes one object from JSON with the strict serializers the
// handlers use when a request does not ask for fieldValidation=Ignore (client-go's and
// kubectl's requests): ours the generated server's, the CRD's apiextensions-apiserver's
// (upstream's JSON serializer decoding into an Unstructured).
func BenchmarkDecodeStrict(b *testing.B) {
	scheme, data := decodeInput(b)
	strict := jsonserializer.SerializerOptions{Strict: true}
	meta := &parseCounter{}
	ours := typedjson.NewSerializer(jsonserializer.NewSerializerWithOptions(meta, scheme, scheme, strict), scheme)
	crd := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, unstructuredscheme.NewUnstructuredCreator(), unstructuredscheme.NewUnstructuredObjectTyper(), strict)
	pair(b, func() error {
		_, _, err := ours.Decode(data, nil, &widget{})
		return err
	}, func() error {
		_, _, err := crd.Decode(data, nil, &unstructured.Unstructured{})
		return err
	})
	meta.none(b)
}

// parseCounter is upstream's MetaFactory counting the bodies it parses for apiVersion and
// kind: none means the benchmark measured the one-parse decoding.
type parseCounter struct{ n atomic.Int64 }

func (c *parseCounter) Interpret(data []byte) (*schema.GroupVersionKind, error) {
	c.n.Add(1)
	return jsonserializer.DefaultMetaFactory.Interpret(data)
}

func (c *parseCounter) none(b *testing.B) {
	b.Helper()
	if n := c.n.Load(); n > 0 {
		b.Fatalf("%d bodies were parsed a second time for apiVersion and kind", n)
	}
}

// decodeInput returns the widgets' scheme and one widget in JSON.
func decodeInput(b *testing.B) (*runtime.Scheme, []byte) {
	typed, _ := widgets(b, 1)
	scheme := widgetScheme(b)
	codec := jsonserializer.NewSerializerWithOptions(jsonserializer.DefaultMetaFactory, scheme, scheme, jsonserializer.SerializerOptions{})
	var buf bytes.Buffer
	if err := codec.Encode(&typed.Items[0], &buf); err != nil {
		b.Fatal(err)
	}
	return scheme, buf.Bytes()
}

// BenchmarkValidate validates a valid object against its structural schema with its CEL
// rules: ours reads the typed object (typedCheck) where the CRD's handler runs its schema
// validator on the unstructured object, and both evaluate the rules on the unstructured
// object (ours converts it first).
func BenchmarkValidate(b *testing.B) {
	benchmarkValidate(b, defs("self.size > 0"))
}

// BenchmarkValidateWithoutCEL validates a valid object against the same schema without its
// CEL rules: ours reads only the typed object.
func BenchmarkValidateWithoutCEL(b *testing.B) {
	benchmarkValidate(b, withoutRules(defs("")))
}

// withoutRules returns the definitions without their CEL rules.
func withoutRules(d openapicommon.GetOpenAPIDefinitions) openapicommon.GetOpenAPIDefinitions {
	return func(ref openapicommon.ReferenceCallback) map[string]openapicommon.OpenAPIDefinition {
		out := d(ref)
		for name, def := range out {
			delete(def.Schema.Extensions, "x-kubernetes-validations")
			for p, prop := range def.Schema.Properties {
				delete(prop.Extensions, "x-kubernetes-validations")
				def.Schema.Properties[p] = prop
			}
			out[name] = def
		}
		return out
	}
}

func benchmarkValidate(b *testing.B, definitions openapicommon.GetOpenAPIDefinitions) {
	v, err := newSchemaValidator(&Schema{Definitions: definitions, Name: "com.example.v1.Widget"})
	if err != nil {
		b.Fatal(err)
	}
	if !v.certain(context.Background(), &schemaWidgetTyped{Spec: schemaWidgetSpec{Size: 2, Color: "red", Count: intstr.FromString("3")}}) {
		b.Fatal("the typed check does not vouch for the valid object: the pair would measure the CRD's validator on both sides")
	}
	// Metadata as a create has it when it is validated (uid, timestamps, labels,
	// managed fields), on both sides.
	typed := &schemaWidgetTyped{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}, ObjectMeta: fullMetadata("w", ""),
		Spec: schemaWidgetSpec{Size: 2, Color: "red", Count: intstr.FromString("3")}}
	obj := schemaWidget(map[string]any{"size": int64(2), "color": "red", "count": "3"})
	meta, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&typed.ObjectMeta)
	if err != nil {
		b.Fatal(err)
	}
	obj.Object["metadata"] = meta
	ctx := context.Background()
	pair(b, func() error {
		if errs := v.validate(ctx, typed, nil); len(errs) > 0 {
			return errs.ToAggregate()
		}
		return nil
	}, func() error {
		errs := apiextensionsvalidation.ValidateCustomResource(nil, obj.Object, v.validator)
		if v.cel != nil {
			celErrs, _ := v.cel.Validate(ctx, nil, v.structural, obj.Object, nil, celconfig.RuntimeCELCostBudget)
			errs = append(errs, celErrs...)
		}
		if len(errs) > 0 {
			return errs.ToAggregate()
		}
		return nil
	})
}

// schemaWidgetTyped is the Go type of the schema defs describes.
type schemaWidgetTyped struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              schemaWidgetSpec `json:"spec"`
}

type schemaWidgetSpec struct {
	Size  int32              `json:"size"`
	Color string             `json:"color,omitempty"`
	Count intstr.IntOrString `json:"count,omitempty"`
}

func (w *schemaWidgetTyped) DeepCopyObject() runtime.Object {
	out := *w
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// BenchmarkTable converts a list of 500 objects to a Table with four columns, as
// `kubectl get` asks for.
func BenchmarkTable(b *testing.B) {
	typed, untyped := widgets(b, 500)
	columns := []Column{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Shiny", Type: "boolean", JSONPath: ".spec.shiny", Priority: 1},
		{Name: "Replicas", Type: "integer", JSONPath: ".status.replicas"},
	}
	ours, err := NewTableConvertor(columns)
	if err != nil {
		b.Fatal(err)
	}
	var crdColumns []apiextensionsv1.CustomResourceColumnDefinition
	for _, c := range columns {
		crdColumns = append(crdColumns, apiextensionsv1.CustomResourceColumnDefinition{Name: c.Name, Type: c.Type, JSONPath: c.JSONPath, Priority: c.Priority})
	}
	peer, err := tableconvertor.New(crdColumns)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	pair(b, func() error {
		_, err := ours.ConvertToTable(ctx, typed, nil)
		return err
	}, func() error {
		_, err := peer.ConvertToTable(ctx, untyped, nil)
		return err
	})
}
