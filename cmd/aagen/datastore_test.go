package main

import (
	"strings"
	"testing"
)

func TestUpStorageArgs(t *testing.T) {
	for _, c := range []struct{ datastore, want string }{
		{"", "--embedded-etcd-dir=/s/etcd"},
		{"etcd", "--embedded-etcd-dir=/s/etcd"},
		{"sqlite", "--datastore-endpoint=sqlite:///s/sqlite/state.db"},
	} {
		got, err := upStorageArgs(c.datastore, "/s")
		if err != nil || len(got) != 1 || got[0] != c.want {
			t.Errorf("upStorageArgs(%q) = %v, %v; want [%s]", c.datastore, got, err, c.want)
		}
	}
	if _, err := upStorageArgs("postgres", "/s"); err == nil || !strings.Contains(err.Error(), "want etcd") {
		t.Errorf("upStorageArgs(postgres): want an error naming the choices, got %v", err)
	}
}
