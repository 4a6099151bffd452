package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metatable "k8s.io/apimachinery/pkg/api/meta/table"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/client-go/util/jsonpath"
)

// The cell semantics below follow k8s.io/apiextensions-apiserver's tableconvertor package
// (the table of custom resources), so columns behave as they would in a CRD.

var objectMetaDescriptions = metav1.ObjectMeta{}.SwaggerDoc()

// columnTypes are the types a Column may have.
var columnTypes = []string{"integer", "number", "string", "boolean", "date"}

// tableConvertor renders objects as kubectl get shows them: NAME, then the columns, or AGE
// when there are none, as kube-apiserver renders a custom resource.
type tableConvertor struct {
	headers []metav1.TableColumnDefinition
	columns []Column
	// age is set when the AGE column is shown: when no column is declared.
	age bool
	// roots are the top-level fields the columns read ("spec", "status"): only those are
	// converted to their JSON form for the JSONPaths, not the whole object (metadata with
	// its managed fields is the largest part of most objects). Nil when a column's path
	// does not start with a field name; the whole object is converted then.
	roots []string
	// index is where the roots are in the Go type of the objects (one per resource).
	index atomic.Pointer[rootIndex]
}

// rootIndex locates the roots in one Go struct type.
type rootIndex struct {
	t reflect.Type
	// fields are the field indexes of the roots (nil for a root the type does not have).
	fields [][]int
	// whole is set when a root is not a struct: the whole object is converted then.
	whole bool
}

// NewTableConvertor returns the table convertor for columns: NAME, then the columns in
// order; with no columns, NAME and AGE. That is a CRD's table: kube-apiserver shows its
// additionalPrinterColumns alone, and AGE only when there are none (kubebuilder projects
// declare an Age column of their own). It fails on a column with an unknown type or a
// JSONPath that does not parse.
func NewTableConvertor(columns []Column) (rest.TableConvertor, error) {
	c := &tableConvertor{
		headers: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: objectMetaDescriptions["name"]}},
		columns: columns,
		age:     len(columns) == 0,
	}
	for _, col := range columns {
		if col.Name == "" {
			return nil, fmt.Errorf("column with JSONPath %q has no name", col.JSONPath)
		}
		if !contains(columnTypes, col.Type) {
			return nil, fmt.Errorf("column %q: type %q is not one of %s", col.Name, col.Type, strings.Join(columnTypes, ", "))
		}
		if col.Priority < 0 {
			return nil, fmt.Errorf("column %q: priority %d is negative", col.Name, col.Priority)
		}
		if _, err := parseColumn(col); err != nil {
			return nil, err
		}
		desc := col.Description
		if desc == "" {
			desc = fmt.Sprintf("Column (in JSONPath format): %s", col.JSONPath)
		}
		c.headers = append(c.headers, metav1.TableColumnDefinition{
			Name: col.Name, Type: col.Type, Format: col.Format, Description: desc, Priority: col.Priority,
		})
	}
	if c.age {
		c.headers = append(c.headers, metav1.TableColumnDefinition{Name: "Age", Type: "date", Description: objectMetaDescriptions["creationTimestamp"]})
	}
	c.roots = columnRoots(columns)
	return c, nil
}

// plainName tells whether s is a field name that needs no quoting in a JSONPath.
func plainName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// columnRoots returns the distinct first field names of the columns' paths, or nil when a
// path starts otherwise (a recursive descent, an index, a filter).
func columnRoots(columns []Column) []string {
	var roots []string
	for _, col := range columns {
		rest := strings.TrimPrefix(col.JSONPath, ".")
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		root := rest[:end]
		if !plainName(root) {
			return nil
		}
		if !contains(roots, root) {
			roots = append(roots, root)
		}
	}
	return roots
}

func parseColumn(col Column) (*jsonpath.JSONPath, error) {
	if !strings.HasPrefix(col.JSONPath, ".") {
		return nil, fmt.Errorf("column %q: JSONPath %q does not start with '.'", col.Name, col.JSONPath)
	}
	p := jsonpath.New(col.Name)
	if err := p.Parse("{" + col.JSONPath + "}"); err != nil {
		return nil, fmt.Errorf("column %q: JSONPath %q: %w", col.Name, col.JSONPath, err)
	}
	p.AllowMissingKeys(true)
	return p, nil
}

func (c *tableConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	table := &metav1.Table{}
	if opt, ok := tableOptions.(*metav1.TableOptions); !ok || opt == nil || !opt.NoHeaders {
		table.ColumnDefinitions = c.headers
	}
	if m, err := meta.ListAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
		table.Continue = m.GetContinue()
		table.RemainingItemCount = m.GetRemainingItemCount()
	} else if m, err := meta.CommonAccessor(obj); err == nil {
		table.ResourceVersion = m.GetResourceVersion()
	}
	// A JSONPath keeps state while it evaluates: parse the columns for this call alone.
	paths := make([]*jsonpath.JSONPath, len(c.columns))
	for i, col := range c.columns {
		p, err := parseColumn(col)
		if err != nil {
			return nil, err
		}
		paths[i] = p
	}
	var buf bytes.Buffer
	var err error
	table.Rows, err = metatable.MetaToTableRow(obj, func(obj runtime.Object, m metav1.Object, name, age string) ([]any, error) {
		cells := make([]any, 1, 2+len(paths))
		cells[0] = name
		if len(paths) > 0 {
			content, err := c.content(obj)
			if err != nil {
				return nil, err
			}
			for i, p := range paths {
				cells = append(cells, cell(p, c.columns[i].Type, content, &buf))
			}
		}
		if c.age {
			cells = append(cells, age)
		}
		return cells, nil
	})
	return table, err
}

// content is the JSON form of obj, or of the parts of it the columns read.
func (c *tableConvertor) content(obj runtime.Object) (map[string]any, error) {
	v := reflect.ValueOf(obj)
	if c.roots == nil || v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	v = v.Elem()
	ix := c.rootIndex(v.Type())
	if ix.whole {
		return runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	}
	out := make(map[string]any, len(c.roots))
	for i, root := range c.roots {
		if ix.fields[i] == nil {
			continue // no such field: its cells are empty, as for a missing key
		}
		f, err := v.FieldByIndexErr(ix.fields[i])
		if err != nil {
			continue // behind a nil embedded pointer
		}
		if f.Kind() == reflect.Pointer {
			if f.IsNil() {
				continue
			}
			f = f.Elem()
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f.Addr().Interface())
		if err != nil {
			return nil, err
		}
		out[root] = m
	}
	return out, nil
}

// rootIndex returns where the roots are in t, computed on first use.
func (c *tableConvertor) rootIndex(t reflect.Type) *rootIndex {
	if ix := c.index.Load(); ix != nil && ix.t == t {
		return ix
	}
	ix := &rootIndex{t: t, fields: make([][]int, len(c.roots))}
	for i, root := range c.roots {
		idx := findJSONField(t, root)
		if idx == nil {
			continue
		}
		ft := t.FieldByIndex(idx).Type
		if ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct {
			ix.whole = true
		}
		ix.fields[i] = idx
	}
	c.index.Store(ix)
	return ix
}

func findJSONField(t reflect.Type, name string) []int {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if sub := findJSONField(et, name); sub != nil {
					return append([]int{i}, sub...)
				}
			}
			continue
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return []int{i}
		}
	}
	return nil
}

// cell evaluates one column on an object's JSON form. A missing value, or one of the wrong
// type, is an empty cell; a string column prints any value the way kubectl's jsonpath does.
func cell(p *jsonpath.JSONPath, typ string, content map[string]any, buf *bytes.Buffer) any {
	results, err := p.FindResults(content)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	// Like a CRD column, only the first result counts.
	value := results[0][0].Interface()
	if typ == "string" {
		buf.Reset()
		if err := p.PrintResults(buf, []reflect.Value{reflect.ValueOf(value)}); err != nil {
			return nil
		}
		return buf.String()
	}
	return cellForJSONValue(typ, value)
}

func cellForJSONValue(typ string, value any) any {
	if value == nil {
		return nil
	}
	switch typ {
	case "integer":
		switch v := value.(type) {
		case int64:
			return v
		case float64:
			return int64(v)
		case json.Number:
			if i, err := v.Int64(); err == nil {
				return i
			}
		}
	case "number":
		switch v := value.(type) {
		case int64:
			return float64(v)
		case float64:
			return v
		case json.Number:
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
	case "boolean":
		if b, ok := value.(bool); ok {
			return b
		}
	case "string":
		if s, ok := value.(string); ok {
			return s
		}
	case "date":
		if s, ok := value.(string); ok {
			var t metav1.Time
			if err := t.UnmarshalQueryParameter(s); err != nil {
				return "<invalid>"
			}
			return metatable.ConvertToHumanReadableDateType(t)
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
