package migrate

import (
	"encoding/json"
	"testing"

	"github.com/aagen-dev/aagen/runtime/objectimport"
)

// TestImportRoutesMatchTheServer: the command's copy of the import's paths and state is
// the server's.
func TestImportRoutesMatchTheServer(t *testing.T) {
	if importPath != objectimport.ImportPath || statePath != objectimport.StatePath {
		t.Errorf("paths %s, %s; the server serves %s, %s", importPath, statePath, objectimport.ImportPath, objectimport.StatePath)
	}
	data, err := json.Marshal(MigrationState{InProgress: true, Source: "s", By: "b", HandedBack: true})
	if err != nil {
		t.Fatal(err)
	}
	var st objectimport.State
	if err := json.Unmarshal(data, &st); err != nil || !st.InProgress || st.Source != "s" || st.By != "b" || !st.HandedBack {
		t.Errorf("the server reads %s as %+v, %v", data, st, err)
	}
}
