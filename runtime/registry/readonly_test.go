package registry

import (
	"strings"
	"testing"

	"k8s.io/apiserver/pkg/registry/rest"
)

// TestReadOnlyREST: the storage of a read-only resource (+genclient:readonly) has the
// reading interfaces k8s.io/apiserver's installer turns into get, list and watch, and none
// of those it turns into writes, so discovery lists only the reads and a write is 405.
func TestReadOnlyREST(t *testing.T) {
	var s rest.Storage = &ReadOnlyREST{readable: &REST{}}
	if _, ok := s.(rest.Getter); !ok {
		t.Error("no get")
	}
	if _, ok := s.(rest.Lister); !ok {
		t.Error("no list")
	}
	if _, ok := s.(rest.Watcher); !ok {
		t.Error("no watch")
	}
	if _, ok := s.(interface{ FieldLabels() []string }); !ok {
		t.Error("no field labels: field selectors would not be registered")
	}
	for name, writes := range map[string]bool{
		"create":           is[rest.Creater](s),
		"update":           is[rest.Updater](s),
		"patch":            is[rest.Patcher](s),
		"delete":           is[rest.GracefulDeleter](s),
		"deletecollection": is[rest.CollectionDeleter](s),
	} {
		if writes {
			t.Errorf("the read-only storage serves %s", name)
		}
	}
	// A read-only resource takes nothing that writes through its storage.
	r := widgetResource()
	r.ReadOnly = true
	if err := r.validate(); err == nil || !strings.Contains(err.Error(), "a read-only resource has no Status or Scale") {
		t.Errorf("read-only with /scale: %v", err)
	}
	r.Scale = nil
	if err := r.validate(); err != nil {
		t.Errorf("read-only without subresources: %v", err)
	}
}

func is[I any](s rest.Storage) bool {
	_, ok := s.(I)
	return ok
}
