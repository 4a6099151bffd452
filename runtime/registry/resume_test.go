package registry

import (
	"context"
	"strconv"
	"testing"

	"k8s.io/apiserver/pkg/storage"
)

// revisionAt is a storage whose etcd is at revision cur.
type revisionAt struct {
	storage.Interface
	cur uint64
}

func (r revisionAt) GetCurrentResourceVersion(context.Context) (uint64, error) { return r.cur, nil }

// TestResumableDistance: a watch the watch cache answers with 410 is resumed from etcd only
// within maxResumeRevisions of etcd's current revision (etcd reads every revision since
// before the first event); a watch from resourceVersion 1 on a long history keeps its 410.
func TestResumableDistance(t *testing.T) {
	s := &resumingStorage{}
	const cur = 50000
	for _, c := range []struct {
		rv   string
		want bool
	}{
		{strconv.Itoa(cur - maxResumeRevisions), true},
		{strconv.Itoa(cur - 10), true},
		{strconv.Itoa(cur + 5), true}, // newer than etcd's: not this check's to refuse
		{strconv.Itoa(cur - maxResumeRevisions - 1), false},
		{"1", false},
		{"not-a-number", false},
	} {
		if got := s.resumable(context.Background(), revisionAt{cur: cur}, c.rv); got != c.want {
			t.Errorf("resumable(%s) at revision %d = %v, want %v", c.rv, cur, got, c.want)
		}
	}
}
