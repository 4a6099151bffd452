package server

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/union"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// PublicInfoPaths returns the paths anyone may read without credentials in local mode: the
// health checks and /version, as kube-apiserver's system:public-info-viewer role grants
// them to system:unauthenticated. They match exactly, with any query (/readyz?verbose);
// everything else (the checks' sub-paths, discovery, OpenAPI, resources, /metrics) needs
// a client certificate.
func PublicInfoPaths() []string {
	return []string{"/healthz", "/livez", "/readyz", "/version", "/version/"}
}

// anonymousPublicInfo returns the anonymous authentication of local mode: a request
// without credentials is authenticated as system:anonymous only on PublicInfoPaths, and
// is rejected with 401 everywhere else.
func anonymousPublicInfo() *apiserver.AnonymousAuthConfig {
	c := &apiserver.AnonymousAuthConfig{Enabled: true}
	for _, p := range PublicInfoPaths() {
		c.Conditions = append(c.Conditions, apiserver.AnonymousAuthCondition{Path: p})
	}
	return c
}

// allowPublicInfo puts an authorizer in front of cfg's that lets anyone GET
// PublicInfoPaths and has no opinion on anything else.
func allowPublicInfo(cfg *genericapiserver.RecommendedConfig) error {
	chain := []union.NamedAuthorizer{{AuthorizerName: "public-info", Authorizer: authorizer.AuthorizerFunc(authorizePublicInfo)}}
	if cfg.Authorization.Authorizer != nil {
		chain = append(chain, union.NamedAuthorizer{AuthorizerName: "local", Authorizer: cfg.Authorization.Authorizer})
	}
	authz, err := union.New(chain...)
	if err != nil {
		return fmt.Errorf("building the local authorizer: %w", err)
	}
	cfg.Authorization.Authorizer = authz
	return nil
}

// authorizePublicInfo allows GET (and HEAD) of PublicInfoPaths to every user, including
// system:anonymous, like kube-apiserver's system:public-info-viewer binding.
func authorizePublicInfo(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if a.IsResourceRequest() || (a.GetVerb() != "get" && a.GetVerb() != "head") || !slices.Contains(PublicInfoPaths(), a.GetPath()) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	return authorizer.DecisionAllow, "public information: " + a.GetPath(), nil
}
