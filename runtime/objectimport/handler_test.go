package objectimport

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
)

// recordingAuthorizer answers decision, or for the name allowedName DecisionAllow, and
// records what it was asked.
type recordingAuthorizer struct {
	decision    authorizer.Decision
	allowedName string
	asked       []authorizer.Attributes
}

func (a *recordingAuthorizer) authorizer() authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
		a.asked = append(a.asked, attrs)
		if a.allowedName != "" && attrs.GetName() == a.allowedName {
			return authorizer.DecisionAllow, "", nil
		}
		return a.decision, "no RBAC rule grants it", nil
	})
}

// TestImportAuthorization: each imported object is authorized with the verb "import" on
// its own resource and namespace through the server's authorizer, then, when that is not
// allowed, on its name (RBAC's resourceNames); a user it does not allow gets 403 naming
// the verb and the RBAC rule that grants it, before the migration state is even read.
func TestImportAuthorization(t *testing.T) {
	gv := schema.GroupVersion{Group: "shop.example.com", Version: "v1"}
	scheme := runtime.NewScheme()
	scheme.AddKnownTypes(gv, &corev1.Namespace{})
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	scheme.AddUnversionedTypes(schema.GroupVersion{Version: "v1"}, &metav1.Status{})
	gk := schema.GroupKind{Group: gv.Group, Kind: "Namespace"}
	stateRead := false
	for _, c := range []struct {
		decision    authorizer.Decision
		allowedName string
		code        int
		askedNames  []string
	}{
		{authorizer.DecisionDeny, "", http.StatusForbidden, []string{"", "a"}},
		{authorizer.DecisionNoOpinion, "", http.StatusForbidden, []string{"", "a"}},
		{authorizer.DecisionAllow, "", http.StatusServiceUnavailable, []string{""}},
		{authorizer.DecisionDeny, "a", http.StatusServiceUnavailable, []string{"", "a"}},
	} {
		authz := &recordingAuthorizer{decision: c.decision, allowedName: c.allowedName}
		h := &Handler{
			Targets: map[schema.GroupKind]Target{gk: {Kind: gk, Store: &genericregistry.Store{DefaultQualifiedResource: gv.WithResource("widgets").GroupResource()}}},
			Scheme:  scheme, Codecs: serializer.NewCodecFactory(scheme), Authorizer: authz.authorizer(),
			States: func() (StateStore, error) {
				stateRead = true
				return StateStore{}, errors.New("no storage in this test")
			},
		}
		stateRead = false
		body := `{"apiVersion":"shop.example.com/v1","kind":"Namespace","metadata":{"name":"a","namespace":"team-1","uid":"u1"}}`
		req := httptest.NewRequest(http.MethodPost, ImportPath, strings.NewReader(body))
		req = req.WithContext(genericapirequest.WithUser(req.Context(), &user.DefaultInfo{Name: "alice"}))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("authorizer %v (allowing %q): %d %s, want %d", c.decision, c.allowedName, rec.Code, rec.Body, c.code)
		}
		if len(authz.asked) != len(c.askedNames) {
			t.Fatalf("authorizer %v (allowing %q) asked %d times, want %d", c.decision, c.allowedName, len(authz.asked), len(c.askedNames))
		}
		for i, a := range authz.asked {
			if a.GetUser().GetName() != "alice" || a.GetVerb() != ImportVerb || a.GetAPIGroup() != gv.Group || a.GetResource() != "widgets" ||
				a.GetNamespace() != "team-1" || a.GetName() != c.askedNames[i] || !a.IsResourceRequest() {
				t.Errorf("authorizer asked %+v, want alice to import widgets.shop.example.com in team-1 named %q", a, c.askedNames[i])
			}
		}
		if c.code == http.StatusForbidden {
			for _, want := range []string{`may not import widgets.shop.example.com`, `verbs [\"import\"]`, `no RBAC rule grants it`} {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("authorizer %v: answer %s, want it to say %s", c.decision, rec.Body, want)
				}
			}
			if stateRead {
				t.Errorf("authorizer %v: the migration state was read for a refused user", c.decision)
			}
		} else if !stateRead {
			t.Errorf("an allowed import did not read the migration state")
		}
	}
}
