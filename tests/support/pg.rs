//! A throwaway PostgreSQL from Debian's packages for the tests: initdb into a
//! temporary folder as the `postgres` user, listening on 127.0.0.1 on a free
//! port (and a socket in the folder), stopped on drop.  With a password, TCP
//! connections need it (scram-sha-256); without, everything is trusted.
#![allow(dead_code)] // each test binary uses its own part
use std::path::PathBuf;
use std::process::{Command, Output};

pub struct Postgres {
    dir: tempfile::TempDir,
    pub port: u16,
    bin: PathBuf,
}

/// The newest /usr/lib/postgresql/<version>/bin.
pub fn pg_bin() -> PathBuf {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL from Debian's packages (/usr/lib/postgresql)")
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    v.sort_by_key(|p| {
        p.parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .and_then(|n| n.parse::<u32>().ok())
            .unwrap_or(0)
    });
    v.pop().expect("an initdb under /usr/lib/postgresql/*/bin")
}

fn ok(what: &str, out: std::io::Result<Output>) -> Output {
    let out = out.unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

impl Postgres {
    /// Everything trusted; superuser `postgres`.
    pub fn start() -> Postgres {
        Postgres::start_with(None)
    }

    /// `password`: TCP connections authenticate with scram-sha-256 as
    /// superuser `postgres` with it.
    pub fn start_with(password: Option<&str>) -> Postgres {
        let pg = Postgres::init(password);
        pg.ctl("start");
        pg
    }

    /// TCP only over TLS (`hostssl` trusted, `hostnossl` rejected), with a
    /// server certificate for 127.0.0.1 from a throwaway CA; the CA's file.
    pub fn start_tls() -> (Postgres, PathBuf) {
        let pg = Postgres::init(None);
        let d = pg.dir.path();
        let sh = format!(
            "set -e; cd {d}; \
             openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt -days 2 -subj /CN=fsmatrix-test-ca 2>/dev/null; \
             openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key -out server.csr -subj /CN=127.0.0.1 2>/dev/null; \
             printf 'subjectAltName=IP:127.0.0.1\\n' > san; \
             openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 -extfile san 2>/dev/null; \
             openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout other.key -out other-ca.crt -days 2 -subj /CN=someone-else 2>/dev/null; \
             chown postgres server.key server.crt; chmod 0600 server.key; \
             printf \"ssl = on\\nssl_cert_file = '{d}/server.crt'\\nssl_key_file = '{d}/server.key'\\n\" >> data/postgresql.conf; \
             printf 'local all all trust\\nhostssl all all 127.0.0.1/32 trust\\nhostnossl all all 127.0.0.1/32 reject\\n' > data/pg_hba.conf",
            d = d.display()
        );
        ok("TLS set-up", Command::new("sh").arg("-c").arg(&sh).output());
        pg.ctl("start");
        let ca = d.join("ca.crt");
        (pg, ca)
    }

    /// initdb only.
    fn init(password: Option<&str>) -> Postgres {
        let dir = tempfile::Builder::new()
            .prefix("fsmatrix-pg-")
            .tempdir()
            .expect("temp dir");
        ok(
            "chown",
            Command::new("chown")
                .arg("postgres:postgres")
                .arg(dir.path())
                .output(),
        );
        let bin = pg_bin();
        let data = dir.path().join("data");
        let mut initdb = Command::new("runuser");
        initdb
            .args(["-u", "postgres", "--"])
            .arg(bin.join("initdb"))
            .args(["--auth-local=trust", "-U", "postgres", "-D"])
            .arg(&data)
            .env("LC_ALL", "C");
        match password {
            Some(pw) => {
                let file = dir.path().join("pw");
                std::fs::write(&file, format!("{pw}\n")).expect("write the password file");
                ok(
                    "chown pw",
                    Command::new("chown").arg("postgres").arg(&file).output(),
                );
                initdb
                    .arg("--auth-host=scram-sha-256")
                    .arg(format!("--pwfile={}", file.display()));
            }
            None => {
                initdb.arg("--auth-host=trust");
            }
        }
        ok("initdb", initdb.output());
        Postgres {
            dir,
            port: free_port(),
            bin,
        }
    }

    /// The folder holding the cluster (and, with TLS, the certificates).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// `pg_ctl ACTION` (start, stop, restart) with this cluster's options.
    pub fn ctl(&self, action: &str) {
        let opts = format!(
            "-p {} -c listen_addresses=127.0.0.1 -k {}",
            self.port,
            self.dir.path().display()
        );
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-w", "-t", "30", "-m", "fast", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("-l")
            .arg(self.dir.path().join("log"));
        if action != "stop" {
            c.args(["-o", &opts]);
        }
        ok(&format!("pg_ctl {action}"), c.arg(action).output());
    }

    /// The cluster's unix socket (`-k` is the cluster's folder).
    pub fn socket(&self) -> String {
        format!("{}/.s.PGSQL.{}", self.dir.path().display(), self.port)
    }

    /// A URL for `user` on 127.0.0.1 (database `postgres`).
    pub fn url(&self, user: &str) -> String {
        format!("postgres://{user}@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-m", "immediate", "-w", "-D"])
            .arg(self.dir.path().join("data"))
            .arg("stop")
            .output();
    }
}
