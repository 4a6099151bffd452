package migrate

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// The generated server's import routes and the body of its state (runtime/objectimport's
// ImportPath, StatePath and State; TestImportRoutesMatchTheServer checks they agree).
const (
	importPath = "/migration/import"
	statePath  = "/migration/state"
)

// MigrationState is the body of statePath.
type MigrationState struct {
	InProgress bool   `json:"inProgress"`
	Source     string `json:"source,omitempty"`
	By         string `json:"by,omitempty"`
}

// Importer writes objects into the generated server with their identity, through its
// import (runtime/objectimport), which a user may use only with the verb "import" on each
// resource and only while the server's migration state is in progress.
type Importer struct {
	client rest.Interface
}

// NewImporter reaches the generated server directly with cfg.
func NewImporter(cfg *rest.Config) (*Importer, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Importer{client: dc.RESTClient()}, nil
}

// SetState starts (in progress) or ends the migration on the server, and returns the
// state it then holds.
func (im *Importer) SetState(ctx context.Context, st MigrationState) (MigrationState, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return MigrationState{}, err
	}
	raw, err := im.client.Put().AbsPath(statePath).SetHeader("Content-Type", "application/json").Body(data).Do(ctx).Raw()
	if err != nil {
		return MigrationState{}, fmt.Errorf("setting the migration state on the generated server: %w", err)
	}
	var out MigrationState
	if err := json.Unmarshal(raw, &out); err != nil {
		return MigrationState{}, fmt.Errorf("the migration state the generated server answered: %w", err)
	}
	return out, nil
}

// Import writes obj, as the source cluster serves it, into the generated server and
// returns the stored object. Its errors are the server's (apierrors.APIStatus: 422 with
// the refused fields, 409, 403).
func (im *Importer) Import(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	raw, err := im.client.Post().AbsPath(importPath).SetHeader("Content-Type", "application/json").Body(data).Do(ctx).Raw()
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the object the generated server answered the import of %s with: %w", obj.GetName(), err)
	}
	return out, nil
}
