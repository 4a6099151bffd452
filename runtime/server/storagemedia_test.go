package server

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStorageMediaTypeOnlyJSON(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string // "" for valid
	}{
		{nil, ""},
		{[]string{"--storage-media-type=application/json"}, ""},
		{[]string{"--storage-media-type=application/vnd.kubernetes.protobuf"}, "--storage-media-type=application/vnd.kubernetes.protobuf: this server stores objects as application/json only"},
		{[]string{"--storage-media-type=application/yaml"}, "--storage-media-type=application/yaml: this server stores objects as application/json only"},
	} {
		o := NewOptions(&Spec{Name: "t", Scheme: runtime.NewScheme()})
		o.EmbeddedEtcdDir = t.TempDir()
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		o.AddFlags(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		err := o.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v: %v", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%v: got %v, want an error containing %q", c.args, err, c.want)
		}
	}
}
