package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/aagen-dev/aagen/e2e/cluster"
)

// corpusPackage is a published API package of the corpus (TestCorpus): taken from its Go
// module unchanged except the import path, it either serves or is refused with Refused.
type corpusPackage struct {
	// Name is what the log calls it.
	Name string
	// Module is the Go module, module@version.
	Module string
	// Pkgs are the module-relative directories of the packages aagen generates for (the
	// types packages, and a group's internal hub package); the packages of the module they
	// import are copied with them.
	Pkgs []string
	// Pins are module@version requirements written before go mod tidy, where tidy's choice
	// needs a newer Go than the toolchain (gateway-api v1.7.0 needs Go 1.27).
	Pins []string
	// Refused is, for a package aagen refuses today, the message aagen must give, with
	// Dir is the project directory the module is copied under, when the one made of its
	// path (corpusDir) does not suit: a module whose root is a group's directory
	// (prometheus-operator's monitoring) needs one that names the group.
	Dir string
	// Item naming what would make it serve (an item of issue 25 or another limitation).
	Refused, Item string
	// Objects are created in a served package and read back equal, field by field.
	Objects []corpusObject
}

// corpusObject is a sample object: a file of the module (an example manifest, JSON or
// YAML, or a round-trip fixture of testdata/HEAD, whose metadata is then replaced by a
// name), or a minimal valid object.
type corpusObject struct {
	// File is a module-relative path, in the package's module or in FileModule.
	File, FileModule string
	// Doc is the index of the object's YAML document in File, counting the non-empty
	// documents separated by "---" lines.
	Doc int
	// RoundTrip says File is a round-trip fixture: its metadata is a round trip's (uid,
	// resourceVersion, managedFields, a deletion timestamp) and is replaced.
	RoundTrip bool
	// Manifest is a JSON object, when there is no File.
	Manifest string
	// Namespaced says whether the kind is namespaced (a fixture is created in "default").
	Namespaced bool
	// ReadOnly says the kind is +genclient:readonly, served from etcd with get, list and
	// watch only: the create must be answered 405 MethodNotAllowed, and reading the object
	// back 404 NotFound (so kubectl found the resource the kind is served as).
	ReadOnly bool
	// ReadAs, when set, names the object's resource in another version, as kubectl takes it
	// (bgppeers.v1beta2.metallb.io): the object is read back in it too, after conversion,
	// and must hold Converted, a JSON object (a subset of the object, as for the round trip).
	ReadAs, Converted string
}

// Pinned versions. openshift/api has no release tags: a commit of its master branch that
// the module proxy and the checksum database serve. The k8s.io modules are the release
// aagen pins (v0.37.2); the others are their newest releases on the module proxy.
const (
	corpusOpenShift    = "github.com/openshift/api@v0.0.0-20251020135558-286504b695bc"
	corpusMetrics      = "k8s.io/metrics@v0.37.2"
	corpusAggregator   = "k8s.io/kube-aggregator@v0.37.2"
	corpusAPIExtension = "k8s.io/apiextensions-apiserver@v0.37.2"
	corpusKueue        = "sigs.k8s.io/kueue@v0.17.0"
	corpusCertManager  = "github.com/cert-manager/cert-manager@v1.21.2"
	corpusWardle       = "k8s.io/sample-apiserver@v0.37.2"
	corpusClusterAPI   = "sigs.k8s.io/cluster-api/api@v1.14.2"
	corpusPromOperator = "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring@v0.95.2"
	corpusMetalLB      = "go.universe.tf/metallb@v0.15.3"
	corpusKatib        = "github.com/kubeflow/katib@v0.19.0"
)

// The refusals of today, each the message its check gives.
const (
	refusedNoListType   = "has no list type"
	refusedNoKinds      = "but no kinds"
	refusedNoAPIPackage = "no API types packages"
	refusedTwoGroups    = "names two groups"
)

// corpus is the list TestCorpus serves or expects refused.
func corpus() []corpusPackage {
	// openshift is an openshift/api group (declared with var GroupName), served with a
	// minimal valid object of one of its kinds (openshift/api ships no example manifests).
	openshift := func(group string, namespaced bool, manifest string) corpusPackage {
		return corpusPackage{Name: "openshift/api " + group + "/v1", Module: corpusOpenShift, Pkgs: []string{group + "/v1"},
			Objects: []corpusObject{{Namespaced: namespaced, Manifest: manifest}}}
	}
	// openshiftRefused is an openshift/api group refused for another reason than its var
	// GroupName (which is accepted).
	openshiftRefused := func(group, refused, item string) corpusPackage {
		return corpusPackage{Name: "openshift/api " + group + "/v1", Module: corpusOpenShift, Pkgs: []string{group + "/v1"},
			Refused: refused, Item: item}
	}
	const virtualKinds = "virtual kinds without a list type (create-only reviews, mappings, imports) are not served"
	return []corpusPackage{
		{Name: "k8s.io/metrics metrics/v1beta1", Module: corpusMetrics,
			Pkgs: []string{"pkg/apis/metrics", "pkg/apis/metrics/v1beta1"},
			Objects: []corpusObject{
				{File: "pkg/apis/testdata/HEAD/metrics.k8s.io.v1beta1.PodMetrics.json", RoundTrip: true, Namespaced: true, ReadOnly: true},
				{File: "pkg/apis/testdata/HEAD/metrics.k8s.io.v1beta1.NodeMetrics.json", RoundTrip: true, ReadOnly: true},
			}},
		{Name: "k8s.io/kube-aggregator apiregistration/v1", Module: corpusAggregator,
			Pkgs: []string{"pkg/apis/apiregistration", "pkg/apis/apiregistration/v1"},
			// sample-apiserver's own APIService manifest.
			Objects: []corpusObject{{File: "artifacts/example/apiservice.yaml", FileModule: corpusWardle}}},
		{Name: "k8s.io/sample-apiserver wardle (internal hub, v1alpha1, v1beta1)", Module: corpusWardle,
			Pkgs:    []string{"pkg/apis/wardle", "pkg/apis/wardle/v1alpha1", "pkg/apis/wardle/v1beta1"},
			Objects: []corpusObject{{File: "artifacts/flunders/01-flunder.yaml"}}},
		{Name: "cert-manager acme/v1", Module: corpusCertManager, Pkgs: []string{"pkg/apis/acme/v1"},
			Pins: []string{"sigs.k8s.io/gateway-api@v1.6.3"},
			Objects: []corpusObject{{Namespaced: true, Manifest: `{"apiVersion":"acme.cert-manager.io/v1","kind":"Order","metadata":{"name":"example-order","namespace":"default"},
				"spec":{"request":"Y3NyLWJ5dGVz","issuerRef":{"name":"letsencrypt","kind":"Issuer"},"commonName":"example.com","dnsNames":["example.com","www.example.com"],"duration":"2160h0m0s"}}`}}},
		{Name: "openshift/api samples/v1", Module: corpusOpenShift, Pkgs: []string{"samples/v1"},
			Objects: []corpusObject{{Manifest: `{"apiVersion":"samples.operator.openshift.io/v1","kind":"Config","metadata":{"name":"cluster"},
				"spec":{"managementState":"Managed","samplesRegistry":"registry.example.com","architectures":["x86_64"],"skippedImagestreams":["jenkins"]}}`}}},

		openshift("route", true, `{"apiVersion":"route.openshift.io/v1","kind":"Route","metadata":{"name":"frontend","namespace":"default"},
			"spec":{"host":"www.example.com","path":"/","to":{"kind":"Service","name":"frontend","weight":100},"port":{"targetPort":"http"},"tls":{"termination":"edge"}}}`),
		openshift("apps", true, `{"apiVersion":"apps.openshift.io/v1","kind":"DeploymentConfig","metadata":{"name":"frontend","namespace":"default"},
			"spec":{"replicas":2,"selector":{"app":"frontend"},"triggers":[{"type":"ConfigChange"}],
				"template":{"metadata":{"labels":{"app":"frontend"}},"spec":{"containers":[{"name":"web","image":"registry.example.com/web:1"}]}}}}`),
		openshiftRefused("project", refusedNoListType, virtualKinds),
		openshift("template", true, `{"apiVersion":"template.openshift.io/v1","kind":"Template","metadata":{"name":"web","namespace":"default"},
			"objects":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"${NAME}"},"spec":{"ports":[{"port":80}]}}],
			"parameters":[{"name":"NAME","value":"web","required":true}],"labels":{"app":"web"}}`),
		// Cluster API's core types: +kubebuilder:pruning:PreserveUnknownFields on typed
		// fields of the recursive JSONSchemaProps, two printer columns named "Available",
		// /scale on MachineDeployment.
		{Name: "sigs.k8s.io/cluster-api core/v1beta2", Module: corpusClusterAPI, Pkgs: []string{"core/v1beta2"},
			Objects: []corpusObject{
				{Namespaced: true, Manifest: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"Cluster","metadata":{"name":"c1","namespace":"default"},
					"spec":{"clusterNetwork":{"pods":{"cidrBlocks":["192.168.0.0/16"]}},
					"controlPlaneRef":{"apiGroup":"controlplane.cluster.x-k8s.io","kind":"KubeadmControlPlane","name":"c1-cp"},
					"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerCluster","name":"c1"}}}`},
				{Namespaced: true, Manifest: `{"apiVersion":"cluster.x-k8s.io/v1beta2","kind":"MachineDeployment","metadata":{"name":"md1","namespace":"default"},
					"spec":{"clusterName":"c1","replicas":2,"selector":{"matchLabels":{"a":"b"}},
					"template":{"metadata":{"labels":{"a":"b"}},"spec":{"clusterName":"c1","bootstrap":{"dataSecretName":"x"},
					"infrastructureRef":{"apiGroup":"infrastructure.cluster.x-k8s.io","kind":"DockerMachineTemplate","name":"t"}}}}}`},
			}},
		// Cluster API's core/v1beta1 converts to v1beta2, the storage version, with Cluster
		// API's own conversion functions (85 of them, around conversion-gen's): a v1beta1
		// Cluster read as v1beta2 has the cluster network its *ClusterNetwork held, which
		// conversion-gen cannot convert to v1beta2's ClusterNetwork and Cluster API's
		// Convert_v1beta1_ClusterSpec_To_v1beta2_ClusterSpec does.
		{Name: "sigs.k8s.io/cluster-api core/v1beta1", Module: corpusClusterAPI, Pkgs: []string{"core/v1beta1"},
			Objects: []corpusObject{
				{Namespaced: true, Manifest: `{"apiVersion":"cluster.x-k8s.io/v1beta1","kind":"Cluster","metadata":{"name":"c0","namespace":"default"},
					"spec":{"paused":true,"clusterNetwork":{"serviceDomain":"cluster.local","pods":{"cidrBlocks":["192.168.0.0/16"]},"services":{"cidrBlocks":["10.96.0.0/12"]}}}}`,
					ReadAs: "clusters.v1beta2.cluster.x-k8s.io", Converted: `{"apiVersion":"cluster.x-k8s.io/v1beta2","spec":{"paused":true,
					"clusterNetwork":{"serviceDomain":"cluster.local","pods":{"cidrBlocks":["192.168.0.0/16"]},"services":{"cidrBlocks":["10.96.0.0/12"]}}}}`},
			}},
		// prometheus-operator's monitoring/v1: ProbeSpec's authorization hides the one of
		// the HTTPConfig it inlines (the Probe sets it); its +kubebuilder:validation:OneOf,
		// which controller-gen does not know, is a warning. The module's root package
		// (monitoring, which v1 imports for GroupName) names the group's directory.
		{Name: "prometheus-operator monitoring/v1", Module: corpusPromOperator, Pkgs: []string{"v1"}, Dir: "prometheusoperator/monitoring",
			Objects: []corpusObject{
				{Namespaced: true, Manifest: `{"apiVersion":"monitoring.coreos.com/v1","kind":"Probe","metadata":{"name":"web","namespace":"default"},
					"spec":{"jobName":"web","interval":"30s","prober":{"url":"blackbox-exporter:9115"},
					"authorization":{"type":"Bearer","credentials":{"name":"probe-token","key":"token"}},
					"targets":{"staticConfig":{"static":["https://example.com"]}}}}`},
				{Namespaced: true, Manifest: `{"apiVersion":"monitoring.coreos.com/v1","kind":"ServiceMonitor","metadata":{"name":"web","namespace":"default"},
					"spec":{"selector":{"matchLabels":{"app":"web"}},"endpoints":[{"port":"http","interval":"30s","path":"/metrics"}]}}`},
				{Namespaced: true, Manifest: `{"apiVersion":"monitoring.coreos.com/v1","kind":"PrometheusRule","metadata":{"name":"web","namespace":"default"},
					"spec":{"groups":[{"name":"web","rules":[{"alert":"WebDown","expr":"up{job=\"web\"} == 0","for":"5m","labels":{"severity":"page"}}]}]}}`},
			}},
		// MetalLB's API: BGPPeer is stored in v1beta2 and v1beta1's converts itself with the
		// ConvertTo and ConvertFrom MetalLB wrote for controller-runtime's conversion webhook
		// (node selectors of its own become label selectors; its keepalive time, a
		// metav1.Duration, becomes v1beta2's pointer to one, "0s" when read as v1beta2);
		// the other kinds are v1beta1's.
		{Name: "MetalLB api/v1beta1, api/v1beta2", Module: corpusMetalLB, Pkgs: []string{"api/v1beta1", "api/v1beta2"},
			Objects: []corpusObject{
				{Namespaced: true, Manifest: `{"apiVersion":"metallb.io/v1beta1","kind":"BGPPeer","metadata":{"name":"peer-sample","namespace":"default"},
					"spec":{"myASN":64500,"peerASN":64501,"peerAddress":"10.0.0.1","holdTime":"1m30s",
					"nodeSelectors":[{"matchLabels":{"rack":"frontend"},"matchExpressions":[{"key":"network-speed","operator":"NotIn","values":["slow"]}]}]}}`,
					ReadAs: "bgppeers.v1beta2.metallb.io", Converted: `{"apiVersion":"metallb.io/v1beta2","spec":{"myASN":64500,"peerASN":64501,"peerAddress":"10.0.0.1","holdTime":"1m30s","keepaliveTime":"0s",
					"nodeSelectors":[{"matchLabels":{"rack":"frontend"},"matchExpressions":[{"key":"network-speed","operator":"NotIn","values":["slow"]}]}]}}`},
				{Namespaced: true, Manifest: `{"apiVersion":"metallb.io/v1beta2","kind":"BGPPeer","metadata":{"name":"peer-two","namespace":"default"},
					"spec":{"myASN":64500,"peerASN":64502,"peerAddress":"10.0.0.2","nodeSelectors":[{"matchLabels":{"rack":"backend"}}]}}`,
					ReadAs: "bgppeers.v1beta1.metallb.io", Converted: `{"apiVersion":"metallb.io/v1beta1","spec":{"myASN":64500,"peerASN":64502,"peerAddress":"10.0.0.2","nodeSelectors":[{"matchLabels":{"rack":"backend"}}]}}`},
				{Namespaced: true, Manifest: `{"apiVersion":"metallb.io/v1beta1","kind":"IPAddressPool","metadata":{"name":"first-pool","namespace":"default"},
					"spec":{"addresses":["192.168.10.0/24","fc00:f853:0ccd:e799::/124"],"autoAssign":true}}`},
			}},
		openshiftRefused("user", refusedNoListType, virtualKinds),
		openshiftRefused("image", refusedNoListType, virtualKinds),
		openshiftRefused("security", refusedNoListType, virtualKinds),
		// kueue's own examples (cmd/kueueviz/examples), in v1beta2, its storage version.
		{Name: "sigs.k8s.io/kueue kueue/v1beta2", Module: corpusKueue, Pkgs: []string{"apis/kueue/v1beta2"},
			Objects: []corpusObject{
				{File: "cmd/kueueviz/examples/00-resource-flavor.yaml", Doc: 2},
				{File: "cmd/kueueviz/examples/01-cluster-queues.yaml", Doc: 1},
				{File: "cmd/kueueviz/examples/02-local-queues.yaml", Doc: 0, Namespaced: true},
				{File: "cmd/kueueviz/examples/07-workload-priority-classes.yaml", Doc: 0},
			}},
		// v1beta1 converts to v1beta2 with kueue's own conversion functions: its performance
		// test's ResourceFlavor, and a LocalQueue (its other v1beta1 manifests are templates).
		{Name: "sigs.k8s.io/kueue kueue/v1beta1", Module: corpusKueue, Pkgs: []string{"apis/kueue/v1beta1"},
			Objects: []corpusObject{
				{File: "test/performance/e2e/jobs/prerequisites/resource-flavor.yaml"},
				{Namespaced: true, Manifest: `{"apiVersion":"kueue.x-k8s.io/v1beta1","kind":"LocalQueue","metadata":{"name":"team-a","namespace":"default"},
					"spec":{"clusterQueue":"cluster-queue","stopPolicy":"None"}}`},
			}},
		// A CRD of the module's own test examples (kcp's APIExport: nested properties, list
		// items, printer columns), whose JSONSchemaProps nest to the data's depth.
		{Name: "k8s.io/apiextensions-apiserver apiextensions/v1", Module: corpusAPIExtension,
			Pkgs:    []string{"pkg/apis/apiextensions", "pkg/apis/apiextensions/v1"},
			Objects: []corpusObject{{File: "pkg/test/example/apiexports_crd.yaml"}}},
		{Name: "cert-manager certmanager/v1", Module: corpusCertManager, Pkgs: []string{"pkg/apis/certmanager/v1"},
			Pins: []string{"sigs.k8s.io/gateway-api@v1.6.3"},
			// cert-manager's test fixture: an Issuer and a Certificate it issues.
			Objects: []corpusObject{{File: "test/fixtures/cert-manager-resources.yaml", Doc: 0, Namespaced: true},
				{File: "test/fixtures/cert-manager-resources.yaml", Doc: 1, Namespaced: true}}},
		openshift("build", true, `{"apiVersion":"build.openshift.io/v1","kind":"BuildConfig","metadata":{"name":"ruby-sample","namespace":"default"},
			"spec":{"runPolicy":"Serial","triggers":[{"type":"ConfigChange"}],"source":{"type":"Git","git":{"uri":"https://github.com/openshift/ruby-hello-world"}},
				"strategy":{"type":"Source","sourceStrategy":{"from":{"kind":"ImageStreamTag","name":"ruby:latest"}}},
				"output":{"to":{"kind":"ImageStreamTag","name":"ruby-sample:latest"}}}}`),
		openshift("oauth", false, `{"apiVersion":"oauth.openshift.io/v1","kind":"OAuthClient","metadata":{"name":"example-client"},
			"secret":"c2VjcmV0","redirectURIs":["https://example.com/callback"],"grantMethod":"auto"}`),
		openshift("quota", false, `{"apiVersion":"quota.openshift.io/v1","kind":"ClusterResourceQuota","metadata":{"name":"for-alice"},
			"spec":{"selector":{"annotations":{"openshift.io/requester":"alice"}},"quota":{"hard":{"pods":"10","secrets":"20"}}}}`),
		openshift("network", false, `{"apiVersion":"network.openshift.io/v1","kind":"NetNamespace","metadata":{"name":"example"},"netname":"example","netid":100}`),
		openshiftRefused("authorization", refusedNoListType, virtualKinds),
		// The module ships no v1beta1 manifest but its round-trip fixture (every field set,
		// values that do not survive conversion through v1): a CRD with a nested schema, in
		// v1beta1's form (one version's schema is spec.validation; conversion moves it there).
		{Name: "k8s.io/apiextensions-apiserver apiextensions/v1beta1", Module: corpusAPIExtension,
			Pkgs: []string{"pkg/apis/apiextensions", "pkg/apis/apiextensions/v1beta1"},
			Objects: []corpusObject{{Manifest: `{"apiVersion":"apiextensions.k8s.io/v1beta1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.shop.example.com"},
				"spec":{"group":"shop.example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
					"version":"v1","versions":[{"name":"v1","served":true,"storage":true}],
					"validation":{"openAPIV3Schema":{"type":"object","properties":{
						"spec":{"type":"object","required":["size"],"properties":{
							"size":{"type":"integer","minimum":1},
							"parts":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","maxLength":8},
								"children":{"type":"object","additionalProperties":{"type":"object","properties":{"depth":{"type":"integer"}}}}}}}}}}}}}}`}}},
		{Name: "Kubeflow Katib experiments/v1beta1", Module: corpusKatib, Pkgs: []string{"pkg/apis/controller/experiments/v1beta1"},
			Refused: refusedTwoGroups, Item: "right: its comments name the groups experiment.kubeflow.org and experiments.kubeflow.org, and its SchemeGroupVersion kubeflow.org (the group of its hand-written CRDs); a server would serve one group and its clients ask another"},
		{Name: "sigs.k8s.io/kueue kueue/v1alpha1", Module: corpusKueue, Pkgs: []string{"apis/kueue/v1alpha1"},
			Refused: refusedNoKinds, Item: "right: an empty package (a //+genclient line and no types) kept for kube_codegen.sh"},
		{Name: "k8s.io/metrics custom_metrics/v1beta2", Module: corpusMetrics, Pkgs: []string{"pkg/apis/custom_metrics/v1beta2"},
			Refused: refusedNoAPIPackage, Item: "right: no +groupName and no kinds; MetricValueList is a virtual list a backend serves"},
		{Name: "k8s.io/metrics external_metrics/v1beta1", Module: corpusMetrics, Pkgs: []string{"pkg/apis/external_metrics/v1beta1"},
			Refused: refusedNoAPIPackage, Item: "right: no +groupName and no kinds; ExternalMetricValueList is a virtual list a backend serves"},
	}
}

// TestCorpus takes each package of the corpus from its Go module at test time (the module
// cache, filled through the module proxy), copies it with the packages of its module it
// imports, unchanged except the import path, into one project (each module under a
// directory of its own), and then: a package aagen refuses today is generated alone and must
// fail with its expected message; the others are generated, built and served together by
// one `aagen up`, and each sample object is created and read back equal, field by field.
// One log line per package says which.
func TestCorpus(t *testing.T) {
	skipShort(t)
	runsTools(t)
	start := time.Now()
	dir := t.TempDir()
	run(t, dir, aagen(t), "init", "--domain", "example.com", "--module", "example.com/corpus")
	modDirs := map[string]string{}
	copied := map[string]bool{}
	var pins []string
	for _, p := range corpus() {
		if modDirs[p.Module] == "" {
			modDirs[p.Module] = downloadModule(t, p.Module)
		}
		copyPackages(t, modDirs[p.Module], modulePath(p.Module), dir, corpusDir(p), p.Pkgs, copied, nil, nil)
		pins = append(pins, p.Pins...)
	}
	for _, pin := range pins {
		run(t, dir, "go", "mod", "edit", "-require="+pin)
	}
	run(t, dir, "go", "mod", "tidy")
	t.Logf("corpus: %d packages copied in %s", len(corpus()), time.Since(start).Round(time.Second))

	var served []corpusPackage
	var patterns []string
	for _, p := range corpus() {
		if p.Refused == "" {
			served = append(served, p)
			patterns = append(patterns, corpusPatterns(p)...)
			continue
		}
		cmd := exec.Command(aagen(t), append([]string{"generate"}, corpusPatterns(p)...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		switch {
		case err == nil:
			t.Errorf("corpus: %s (%s): generated, but the corpus expects it refused (%s): update corpus()", p.Name, p.Module, p.Item)
		case !strings.Contains(string(out), p.Refused):
			t.Errorf("corpus: %s (%s): refused, but not with %q:\n%s", p.Name, p.Module, p.Refused, out)
		default:
			t.Logf("corpus: %-50s %-70s refused as expected (%s): %s", p.Name, p.Module, p.Item, p.Refused)
		}
	}

	// Generate first, on its own: a refusal is reported with its own message.
	cmd := exec.Command(aagen(t), append([]string{"generate"}, patterns...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("corpus: generating the served packages (%s): %v\n%s", strings.Join(patterns, " "), err, out)
	}
	// A package with protobuf methods of its own (a generated.pb.go from go-to-protobuf) is
	// served in protobuf through them: no warning may say it is JSON and YAML only.
	for _, p := range served {
		for _, d := range p.Pkgs {
			if _, err := os.Stat(filepath.Join(dir, corpusDir(p), filepath.FromSlash(d), "generated.pb.go")); err != nil {
				continue
			}
			pkg := "example.com/corpus/" + path.Join(corpusDir(p), d)
			if warn := "no protobuf for package " + pkg + ":"; strings.Contains(string(out), warn) {
				t.Errorf("corpus: %s: generate warns %q although the package has its own protobuf methods:\n%s", p.Name, warn, out)
			}
		}
	}
	up := startUpPatterns(t, dir, patterns, 25*time.Minute)
	for _, p := range served {
		var failed []string
		for _, o := range p.Objects {
			if why := roundTripObject(t, up.kubeconfig, modDirs[p.Module], o); why != "" {
				failed = append(failed, why)
			}
		}
		if len(failed) > 0 {
			t.Errorf("corpus: %s (%s): served, but:\n\t%s\nthe server's log ends:\n%s", p.Name, p.Module, strings.Join(failed, "\n\t"), serverLogAtPanic(up.stderr.String()))
			continue
		}
		readOnly := 0
		for _, o := range p.Objects {
			if o.ReadOnly {
				readOnly++
			}
		}
		if readOnly > 0 {
			t.Logf("corpus: %-50s %-70s served read-only: %d object(s) refused on create (405) and not found on get (404)", p.Name, p.Module, readOnly)
			continue
		}
		t.Logf("corpus: %-50s %-70s served: %d object(s) created and read back equal", p.Name, p.Module, len(p.Objects))
	}
	t.Logf("corpus: %d packages in %s", len(corpus()), time.Since(start).Round(time.Second))
}

// serverLogAtPanic is the server's log from its first panic (the handler's panic and
// stack), or its end when it has none.
func serverLogAtPanic(log string) string {
	if i := strings.Index(log, "panic"); i >= 0 {
		log = log[max(0, i-2000):]
		return log[:min(len(log), 8000)]
	}
	return cluster.Tail(log, 6000)
}

// modulePath is module@version's path.
func modulePath(modVersion string) string {
	p, _, _ := strings.Cut(modVersion, "@")
	return p
}

// corpusDir is the project directory the package's module is copied under.
func corpusDir(p corpusPackage) string {
	if p.Dir != "" {
		return p.Dir
	}
	return strings.NewReplacer(".", "-", "/", "-").Replace(modulePath(p.Module))
}

// corpusPatterns are the package patterns of p in the project.
func corpusPatterns(p corpusPackage) []string {
	var out []string
	for _, d := range p.Pkgs {
		out = append(out, "./"+path.Join(corpusDir(p), d))
	}
	return out
}

// copyPackages copies the packages pkgs of the module at modDir (path modPath), and every
// package of that module they import or name in the input= or result= of a
// +genclient:method (the generated clients import it), directly or not, into project/sub,
// unchanged except
// the module's import path, which becomes the project's: in import declarations and in
// markers that name packages (+k8s:conversion-gen=<path>). copied holds the project
// directories already copied, by this call or an earlier one. edit, when not nil, then
// edits each file (rel is its package's module-relative directory). place, when not nil,
// is the directory under project/sub a package of the module goes to (the identity when
// nil), and the import paths change with it.
func copyPackages(t *testing.T, modDir, modPath, project, sub string, pkgs []string, copied map[string]bool, edit func(rel, name string, b []byte) []byte, place func(rel string) string) {
	t.Helper()
	projectModule := "example.com/corpus/" + sub
	if place == nil {
		place = func(rel string) string { return rel }
	}
	rewrite := regexp.MustCompile(`([\s"=])` + regexp.QuoteMeta(modPath) + `/([A-Za-z0-9_-]+(?:/[A-Za-z0-9_-]+)*)`)
	methodType := regexp.MustCompile(`(?m)^// \+genclient:method=.*`)
	methodPkg := regexp.MustCompile(`(?:input|result)=` + regexp.QuoteMeta(modPath) + `/([^,\s]+)\.[A-Za-z0-9_]+`)
	queue := append([]string(nil), pkgs...)
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		src, dst := filepath.Join(modDir, filepath.FromSlash(rel)), filepath.Join(project, sub, filepath.FromSlash(place(rel)))
		if copied[dst] {
			continue
		}
		copied[dst] = true
		copyGoSources(t, src, dst, func(name string, b []byte) []byte {
			f, err := parser.ParseFile(token.NewFileSet(), name, b, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if dep, ok := strings.CutPrefix(p, modPath+"/"); ok {
					queue = append(queue, dep)
				} else if p == modPath {
					queue = append(queue, ".") // the module's root package (prometheus-operator's monitoring)
				}
			}
			for _, line := range methodType.FindAll(b, -1) {
				for _, m := range methodPkg.FindAllSubmatch(line, -1) {
					queue = append(queue, string(m[1]))
				}
			}
			if root := []byte(strconv.Quote(modPath)); bytes.Contains(b, root) {
				b = bytes.ReplaceAll(b, root, []byte(strconv.Quote(path.Join(projectModule, place(".")))))
			}
			b = rewrite.ReplaceAllFunc(b, func(m []byte) []byte {
				sm := rewrite.FindSubmatch(m)
				return []byte(string(sm[1]) + projectModule + "/" + place(string(sm[2])))
			})
			if edit != nil {
				b = edit(rel, name, b)
			}
			return b
		})
	}
}

// copyGoSources copies the Go files of src other than tests into dst (made if missing),
// each through edit when edit is not nil.
func copyGoSources(t *testing.T, src, dst string, edit func(name string, b []byte) []byte) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if edit != nil {
			b = edit(e.Name(), b)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// roundTripObject creates o and reads it back; it returns what differs, or "".
func roundTripObject(t *testing.T, kubeconfig, modDir string, o corpusObject) string {
	t.Helper()
	var obj map[string]any
	src := []byte(o.Manifest)
	if o.File != "" {
		if o.FileModule != "" {
			modDir = downloadModule(t, o.FileModule)
		}
		b, err := os.ReadFile(filepath.Join(modDir, filepath.FromSlash(o.File)))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = yamlDocument(b, o.Doc); err != nil {
			t.Fatalf("%s: %v", o.File, err)
		}
		if src, err = yaml.YAMLToJSON(b); err != nil {
			t.Fatalf("%s: %v", o.File, err)
		}
	}
	if err := json.Unmarshal(src, &obj); err != nil {
		t.Fatalf("%s: %v", o.File, err)
	}
	if o.RoundTrip {
		// A create sets uid, resourceVersion, timestamps and managedFields itself.
		meta := map[string]any{"name": "corpus-sample", "labels": map[string]any{"corpus": "yes"}}
		if o.Namespaced {
			meta["namespace"] = "default"
		}
		obj["metadata"] = meta
	}
	manifest, _ := json.Marshal(obj)
	name := fmt.Sprintf("%v %v", obj["kind"], obj["metadata"].(map[string]any)["name"])
	if o.ReadOnly {
		out, err := kubectl(t, kubeconfig, string(manifest), "create", "-f", "-")
		if err == nil || !strings.Contains(out, "MethodNotAllowed") {
			return fmt.Sprintf("%s: kind is +genclient:readonly: kubectl create: want MethodNotAllowed, got %v\n%s", name, err, out)
		}
		if out, err := kubectl(t, kubeconfig, string(manifest), "get", "-f", "-"); err == nil || !strings.Contains(out, "NotFound") {
			return fmt.Sprintf("%s: kind is +genclient:readonly: kubectl get: want NotFound, got %v\n%s", name, err, out)
		}
		return ""
	}
	if out, err := kubectl(t, kubeconfig, string(manifest), "create", "-f", "-"); err != nil {
		return fmt.Sprintf("%s: kubectl create: %v\n%s", name, err, out)
	}
	// kubectl get -f - prints the object in a List (and warnings, such as a deprecated
	// version's, on stderr).
	cmd := exec.Command(cluster.KubeBinary(t, "kubectl"), "--kubeconfig", kubeconfig, "get", "-f", "-", "-o", "json")
	cmd.Stdin = strings.NewReader(string(manifest))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Sprintf("%s: kubectl get: %v\n%s", name, err, stderr.String())
	}
	var list struct{ Items []map[string]any }
	if err := json.Unmarshal(out, &list); err != nil || len(list.Items) != 1 {
		return fmt.Sprintf("%s: kubectl get -o json: %v, want a List of the object:\n%s", name, err, out)
	}
	got := list.Items[0]
	if diffs := jsonSubsetDiff("", obj, got); len(diffs) > 0 {
		return fmt.Sprintf("%s: read back differs from what was created:\n\t\t%s", name, strings.Join(diffs, "\n\t\t"))
	}
	if o.ReadAs == "" {
		return ""
	}
	args := []string{"get", o.ReadAs, obj["metadata"].(map[string]any)["name"].(string), "-o", "json"}
	if o.Namespaced {
		args = append(args, "-n", obj["metadata"].(map[string]any)["namespace"].(string))
	}
	out, err = exec.Command(cluster.KubeBinary(t, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...).Output()
	if err != nil {
		return fmt.Sprintf("%s: kubectl %s: %v", name, strings.Join(args, " "), err)
	}
	var converted, want map[string]any
	if err := json.Unmarshal(out, &converted); err != nil {
		return fmt.Sprintf("%s: kubectl %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	if err := json.Unmarshal([]byte(o.Converted), &want); err != nil {
		t.Fatalf("%s: Converted: %v", name, err)
	}
	if diffs := jsonSubsetDiff("", want, converted); len(diffs) > 0 {
		return fmt.Sprintf("%s: read as %s, it lacks what conversion should give:\n\t\t%s", name, o.ReadAs, strings.Join(diffs, "\n\t\t"))
	}
	return ""
}

// yamlDocument is the doc'th non-empty document of a YAML stream (documents are separated
// by "---" lines; a document of only comments is empty).
func yamlDocument(stream []byte, doc int) ([]byte, error) {
	var docs [][]byte
	for _, d := range regexp.MustCompile(`(?m)^---[ \t]*$`).Split(string(stream), -1) {
		if regexp.MustCompile(`(?m)^[^#\s]`).MatchString(d) {
			docs = append(docs, []byte(d))
		}
	}
	if doc >= len(docs) {
		return nil, fmt.Errorf("document %d wanted, the file has %d", doc, len(docs))
	}
	return docs[doc], nil
}

// jsonSubsetDiff lists the paths where want (what was sent) is not in got (what was read
// back): every field sent must come back equal; the server may add others (defaults,
// metadata).
func jsonSubsetDiff(at string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: sent an object, read back %v", at, got)}
		}
		var out []string
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				out = append(out, fmt.Sprintf("%s.%s: sent %v, read back absent", at, k, w[k]))
				continue
			}
			out = append(out, jsonSubsetDiff(at+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: sent %v, read back %v", at, want, got)}
		}
		var out []string
		for i := range w {
			out = append(out, jsonSubsetDiff(fmt.Sprintf("%s[%d]", at, i), w[i], g[i])...)
		}
		return out
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: sent %v, read back %v", at, want, got)}
		}
		return nil
	}
}

// TestCorpusDoc: docs/corpus.md has a row for each package of the corpus, in the table of
// its outcome (served or refused), with its module version and, for a refusal, the
// message TestCorpus asserts; a served package has a sample object.
func TestCorpusDoc(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "corpus.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The k8s.io/api section has tables of its own (TestKubeAPIKindsDoc).
	doc, _, _ := strings.Cut(string(b), "## Every k8s.io/api kind")
	served, refused, ok := strings.Cut(doc, "## Refused today")
	if !ok {
		t.Fatal(`docs/corpus.md has no "## Refused today" section`)
	}
	rows := 0
	for _, p := range corpus() {
		row := "| " + p.Name + " | `" + p.Module + "` | "
		section, want := served, row
		if p.Refused != "" {
			section, want = refused, row+p.Refused+" | "+p.Item+" |"
		}
		if p.Refused == "" && len(p.Objects) == 0 {
			t.Errorf("corpus: %s is served without a sample object to read back", p.Name)
		}
		if !strings.Contains(section, want) {
			t.Errorf("docs/corpus.md lacks, in its %s table, the row %q", map[bool]string{true: "refused", false: "served"}[p.Refused != ""], want)
		}
		rows++
	}
	if n := strings.Count(doc, "\n| ") - 2*strings.Count(doc, "\n| --- "); n != rows {
		t.Errorf("docs/corpus.md has %d package rows, the corpus %d packages", n, rows)
	}
}
