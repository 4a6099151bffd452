package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
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
	// HandedBack: the group is served by its CRDs again; the server ends the watches it
	// serves.
	HandedBack bool `json:"handedBack,omitempty"`
}

// Importer writes objects into the generated server with their identity, through its
// import (runtime/objectimport), which a user may use only with the verb "import" on each
// resource and only while the server's migration state is in progress.
type Importer struct {
	host   string
	client *http.Client
}

// NewImporter reaches the generated server directly with cfg.
func NewImporter(cfg *rest.Config) (*Importer, error) {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &Importer{host: strings.TrimSuffix(cfg.Host, "/"), client: client}, nil
}

// call sends body to path and returns the answer of a 200, or the server's error as an
// apierrors.APIStatus (its metav1.Status: code, reason, message, causes).
func (im *Importer) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, im.host+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := im.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: %w", method, im.host, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s %s%s: reading the answer: %w", method, im.host, path, err)
	}
	if resp.StatusCode == http.StatusOK {
		return data, nil
	}
	var status metav1.Status
	if json.Unmarshal(data, &status) == nil && status.Kind == "Status" {
		return nil, &apierrors.StatusError{ErrStatus: status}
	}
	return nil, apierrors.NewGenericServerResponse(resp.StatusCode, method, schema.GroupResource{}, "", strings.TrimSpace(string(data)), 0, false)
}

// SetState starts (in progress) or ends the migration on the server, and returns the
// state it then holds.
func (im *Importer) SetState(ctx context.Context, st MigrationState) (MigrationState, error) {
	data, err := json.Marshal(st)
	if err != nil {
		return MigrationState{}, err
	}
	raw, err := im.call(ctx, http.MethodPut, statePath, data)
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
// the refused fields, 409, 403, 400).
func (im *Importer) Import(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return im.post(ctx, importPath, obj)
}

// DryRun checks obj as Import would, the object of the same name it would replace
// included, without writing it; it needs no migration in progress.
func (im *Importer) DryRun(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	return im.post(ctx, importPath+"?dryRun=All", obj)
}

func (im *Importer) post(ctx context.Context, path string, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	raw, err := im.call(ctx, http.MethodPost, path, data)
	if err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{}
	if err := out.UnmarshalJSON(raw); err != nil {
		return nil, fmt.Errorf("the object the generated server answered the import of %s with: %w", obj.GetName(), err)
	}
	return out, nil
}
