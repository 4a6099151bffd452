package emit

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestDeploySQLDatastore: with --datastore=sql the server reads its DSN from a Secret through
// the environment, and no etcd is deployed.
func TestDeploySQLDatastore(t *testing.T) {
	fs, err := deploy(t, DeployOptions{Datastore: DatastoreSQL})
	if err != nil {
		t.Fatal(err)
	}
	got := files(t, fs)
	if _, ok := got["config/deploy/zz_generated.etcd.yaml"]; ok {
		t.Error("an etcd StatefulSet with --datastore=sql")
	}
	if strings.Contains(got["config/deploy/kustomization.yaml"], "etcd") {
		t.Errorf("kustomization names etcd:\n%s", got["config/deploy/kustomization.yaml"])
	}
	dep := got["config/deploy/zz_generated.apiserver.yaml"]
	if strings.Contains(dep, "--etcd-servers") {
		t.Errorf("deployment still points at etcd:\n%s", dep)
	}
	docs := strings.Split(dep, "\n---\n")
	var deployment struct {
		Spec struct {
			Template struct {
				Spec struct {
					Containers []struct {
						Args []string `json:"args"`
						Env  []struct {
							Name      string `json:"name"`
							ValueFrom struct {
								SecretKeyRef struct{ Name, Key string } `json:"secretKeyRef"`
							} `json:"valueFrom"`
						} `json:"env"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(docs[0]), &deployment); err != nil {
		t.Fatal(err)
	}
	c := deployment.Spec.Template.Spec.Containers[0]
	if !contains(c.Args, "--datastore-endpoint=$(DATASTORE_ENDPOINT)") {
		t.Errorf("args %v lack --datastore-endpoint=$(DATASTORE_ENDPOINT)", c.Args)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "DATASTORE_ENDPOINT" || c.Env[0].ValueFrom.SecretKeyRef.Name != "shop-apiserver-datastore" ||
		c.Env[0].ValueFrom.SecretKeyRef.Key != DatastoreSecretKey {
		t.Errorf("env %+v: want DATASTORE_ENDPOINT from secret shop-apiserver-datastore key %s", c.Env, DatastoreSecretKey)
	}

	fs, err = deploy(t, DeployOptions{Datastore: DatastoreSQL, DatastoreSecret: "pg-dsn"})
	if err != nil {
		t.Fatal(err)
	}
	if dep := files(t, fs)["config/deploy/zz_generated.apiserver.yaml"]; !strings.Contains(dep, "name: pg-dsn") {
		t.Errorf("--datastore-secret=pg-dsn not used:\n%s", dep)
	}
}

func TestDeployDatastoreErrors(t *testing.T) {
	for _, c := range []struct {
		o    DeployOptions
		want string
	}{
		{DeployOptions{Datastore: "postgres"}, `--datastore="postgres": want etcd`},
		{DeployOptions{Datastore: DatastoreSQL, EtcdServers: []string{"https://etcd:2379"}}, "exclude each other"},
	} {
		_, err := Deploy(deployModel(t), Options{ServerName: "shop-apiserver"}, c.o, DeployCerts{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Deploy(%+v) = %v, want an error with %q", c.o, err, c.want)
		}
		if _, err := DeployCertRequest("shop-apiserver", c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("DeployCertRequest(%+v) = %v, want an error with %q", c.o, err, c.want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
