package servertest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Sample fills obj from the project's sample objects: the first document in dir's .yaml,
// .yml and .json files (in name order) whose apiVersion and kind match — config/samples in
// a kubebuilder layout, e.g. config/samples/webapp_v1_visitor.yaml. A kind whose zero value
// is not valid (a required pattern, an enum without a default) needs one for CRUD. Without
// a matching sample obj is returned as it is. The sample's namespace and resourceVersion
// are cleared (CRUD sets name and labels); a field the kind does not have fails the test.
func Sample[T Object](t testing.TB, dir, apiVersion, kind string, obj T) T {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return obj
	}
	if err != nil {
		t.Fatalf("samples: %v", err)
	}
	var names []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("samples: %v", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var doc json.RawMessage
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("sample %s: %v", filepath.Join(dir, name), err)
			}
			var head struct{ APIVersion, Kind string }
			if err := json.Unmarshal(doc, &head); err != nil || head.APIVersion != apiVersion || head.Kind != kind {
				continue
			}
			strict := json.NewDecoder(bytes.NewReader(doc))
			strict.DisallowUnknownFields()
			if err := strict.Decode(obj); err != nil {
				t.Fatalf("sample %s (%s %s): %v", filepath.Join(dir, name), apiVersion, kind, strings.TrimPrefix(err.Error(), "json: "))
			}
			obj.SetNamespace("")
			obj.SetResourceVersion("")
			return obj
		}
	}
	return obj
}
