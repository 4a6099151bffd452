package server

import (
	"context"
	"testing"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
)

func TestAuthorizePublicInfo(t *testing.T) {
	anonymous := &user.DefaultInfo{Name: user.Anonymous, Groups: []string{user.AllUnauthenticated}}
	for _, tc := range []struct {
		attrs authorizer.AttributesRecord
		want  authorizer.Decision
	}{
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/livez"}, authorizer.DecisionAllow},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/readyz"}, authorizer.DecisionAllow},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/healthz"}, authorizer.DecisionAllow},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/version"}, authorizer.DecisionAllow},
		{authorizer.AttributesRecord{User: anonymous, Verb: "post", Path: "/version"}, authorizer.DecisionNoOpinion},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/livez/etcd"}, authorizer.DecisionNoOpinion},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/apis"}, authorizer.DecisionNoOpinion},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", Path: "/backup/etcd-snapshot"}, authorizer.DecisionNoOpinion},
		{authorizer.AttributesRecord{User: anonymous, Verb: "get", ResourceRequest: true, APIGroup: "marina.example.com", Resource: "boats"}, authorizer.DecisionNoOpinion},
	} {
		got, _, err := authorizePublicInfo(context.Background(), tc.attrs)
		if err != nil || got != tc.want {
			t.Errorf("%s %s (resource %v): %v %v, want %v", tc.attrs.Verb, tc.attrs.Path, tc.attrs.ResourceRequest, got, err, tc.want)
		}
	}
	conditions := anonymousPublicInfo().Conditions
	if len(conditions) != len(PublicInfoPaths()) {
		t.Errorf("anonymous authentication conditions %v, want one per public path", conditions)
	}
}
