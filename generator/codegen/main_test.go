package codegen

import (
	"os"
	"testing"

	"github.com/aagen-dev/aagen/internal/gotrim"
)

// TestMain builds the generated projects with -trimpath: internal/gotrim says why.
func TestMain(m *testing.M) { os.Exit(gotrim.Main(m.Run)) }
