package server

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
)

func TestValidateDatastore(t *testing.T) {
	for _, c := range []struct {
		endpoint    string
		etcdServers []string
		want        string // "" for valid
	}{
		{"", nil, ""},
		{"sqlite:///tmp/x/state.db", nil, ""},
		{"postgres://u:secret@127.0.0.1:5432/db", nil, ""},
		{"postgres://u:secret@127.0.0.1:5432/db", []string{"http://127.0.0.1:2379"}, "exclude each other"},
		{"etcd://127.0.0.1:2379", nil, "unsupported scheme"},
		{"/var/lib/state.db", nil, "want <scheme>://"},
	} {
		o := NewOptions(&Spec{Name: "t", Scheme: runtime.NewScheme()})
		o.DatastoreEndpoint = c.endpoint
		o.Recommended.Etcd.StorageConfig.Transport.ServerList = c.etcdServers
		err := o.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %v: %v", c.endpoint, c.etcdServers, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %v: got %v, want an error with %q", c.endpoint, c.etcdServers, err, c.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error shows the password: %v", c.endpoint, err)
		}
		if c.endpoint != "" && o.embeddedEtcd() {
			t.Errorf("%q: embedded etcd would start as well", c.endpoint)
		}
	}
}
