package cluster

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
)

// Postgres is a PostgreSQL cluster a test created with initdb in a temporary
// directory, listening on 127.0.0.1 only.
type Postgres struct {
	binDir string
	data   string
	port   int
	cred   *syscall.Credential
}

// postgresBinDir finds Debian's PostgreSQL binaries, installing the postgresql package when
// they are missing (the test needs root for that and fails without it; it never skips).
func postgresBinDir(t T) string {
	t.Helper()
	find := func() string {
		dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
		sort.Strings(dirs)
		for i := len(dirs) - 1; i >= 0; i-- {
			if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
				return dirs[i]
			}
		}
		if p, err := exec.LookPath("initdb"); err == nil {
			return filepath.Dir(p)
		}
		return ""
	}
	if dir := find(); dir != "" {
		return dir
	}
	if os.Geteuid() != 0 {
		t.Fatal("PostgreSQL is not installed and this test is not root: install Debian's postgresql package (apt-get install -y postgresql) and run again")
	}
	t.Logf("installing Debian's postgresql package")
	for _, args := range [][]string{{"update"}, {"install", "-y", "--no-install-recommends", "postgresql"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("apt-get %v: %v\n%s", args, err, out)
		}
	}
	dir := find()
	if dir == "" {
		t.Fatal("apt-get installed postgresql but no initdb under /usr/lib/postgresql/*/bin")
	}
	return dir
}

// StartPostgres creates and starts a PostgreSQL cluster for the test and stops it when the
// test ends. initdb refuses to run as root: as root, the cluster runs as the postgres user
// the Debian package creates. It listens on 127.0.0.1 only, or, with clientCIDRs (a Pod
// network), on every address of the host, and trusts connections from those networks too.
func StartPostgres(t T, clientCIDRs ...string) *Postgres {
	t.Helper()
	p := &Postgres{binDir: postgresBinDir(t)}
	// Not t.TempDir: its parents are private to root, and the server runs as postgres.
	root, err := os.MkdirTemp("", "aagen-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	p.data = filepath.Join(root, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running PostgreSQL as root needs the postgres user of Debian's postgresql package: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chmod(root, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	p.run(t, "initdb", "--pgdata="+p.data, "--username=aagen", "--auth=trust", "--encoding=UTF8", "--no-instructions")
	listen := "127.0.0.1"
	if len(clientCIDRs) > 0 {
		listen = "*"
		hba, err := os.OpenFile(filepath.Join(p.data, "pg_hba.conf"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, cidr := range clientCIDRs {
			if _, err := fmt.Fprintf(hba, "host all all %s trust\n", cidr); err != nil {
				t.Fatal(err)
			}
		}
		if err := hba.Close(); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 0; ; attempt++ {
		p.port = FreePort(t)
		opts := fmt.Sprintf("-c listen_addresses='%s' -p %d -k %s -c max_connections=200", listen, p.port, root)
		err := p.try("pg_ctl", "start", "--wait", "--timeout=60", "--pgdata="+p.data, "--log="+filepath.Join(root, "postgres.log"), "-o", opts)
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(root, "postgres.log"))
			t.Fatalf("pg_ctl start: %v\n%s", err, log)
		}
	}
	t.Cleanup(func() {
		if err := p.try("pg_ctl", "stop", "--wait", "--mode=fast", "--pgdata="+p.data); err != nil {
			t.Logf("stopping PostgreSQL: %v", err)
		}
	})
	return p
}

// DSN is the kine datastore endpoint for database db (kine creates it on first use).
func (p *Postgres) DSN(db string) string {
	return p.DSNAt("127.0.0.1", db)
}

// DSNAt is DSN through the host address host (of a PostgreSQL started with clientCIDRs).
func (p *Postgres) DSNAt(host, db string) string {
	return fmt.Sprintf("postgres://aagen@%s/%s?sslmode=disable", net.JoinHostPort(host, strconv.Itoa(p.port)), db)
}

func (p *Postgres) try(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(p.binDir, name), args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	cmd.Dir = os.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %v\n%s", name, err, out)
	}
	return nil
}

func (p *Postgres) run(t T, name string, args ...string) {
	t.Helper()
	if err := p.try(name, args...); err != nil {
		t.Fatal(err)
	}
}
