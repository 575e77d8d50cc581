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
        let pg = Postgres {
            dir,
            port: free_port(),
            bin,
        };
        pg.ctl("start");
        pg
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
