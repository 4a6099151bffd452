package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

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

// tableConvertor renders objects as kubectl get shows them: NAME, the columns, AGE.
type tableConvertor struct {
	headers []metav1.TableColumnDefinition
	columns []Column
	// age is set when the AGE column is appended (no column is named Age).
	age bool
}

// NewTableConvertor returns the table convertor for columns: NAME, then the columns in
// order, then AGE unless a column is named Age (kubebuilder projects often declare their
// own). It fails on a column with an unknown type or a JSONPath that does not parse.
func NewTableConvertor(columns []Column) (rest.TableConvertor, error) {
	c := &tableConvertor{
		headers: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: objectMetaDescriptions["name"]}},
		columns: columns,
		age:     true,
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
		if strings.EqualFold(col.Name, "Age") {
			c.age = false
		}
	}
	if c.age {
		c.headers = append(c.headers, metav1.TableColumnDefinition{Name: "Age", Type: "date", Description: objectMetaDescriptions["creationTimestamp"]})
	}
	return c, nil
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
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
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
