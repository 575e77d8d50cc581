//! Where the results database is, the way libpq users already say it: a
//! `postgres://` URL or a `key=value` conninfo string (`--db`, or the
//! `FSMATRIX_DB` environment variable so that nothing shows in `ps`), then
//! what the URL leaves out from `PGHOST`, `PGPORT` (only where no host is
//! named: a URL's host without a port is 5432), `PGUSER`, `PGDATABASE`,
//! `PGPASSWORD`, and the password file (`PGPASSFILE`, else `~/.pgpass`),
//! as libpq reads them (https://www.postgresql.org/docs/current/libpq-envars.html,
//! https://www.postgresql.org/docs/current/libpq-pgpass.html).
//!
//! No password is ever printed: [`DbTarget`]'s `Display` is
//! `user@host:port/dbname` and says where the password came from.
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use tokio_postgres::config::Host;
use tokio_postgres::Config;

use super::DbError;

/// A resolved database to connect to.
#[derive(Clone)]
pub struct DbTarget {
    pub config: Config,
    /// Where the password came from: "url", "PGPASSWORD", a password file, or none.
    pub password_from: &'static str,
    /// The CA certificates a server's certificate must chain to
    /// (`PGSSLROOTCERT`, else `~/.postgresql/root.crt`, when it exists).
    pub root_cert: Option<PathBuf>,
}

impl fmt::Display for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let user = self.config.get_user().unwrap_or("?");
        let db = self.config.get_dbname().unwrap_or("?");
        let port = self.config.get_ports().first().copied().unwrap_or(5432);
        let host = match self.config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "?".into(),
        };
        write!(f, "{user}@{host}:{port}/{db}")
    }
}

impl fmt::Debug for DbTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DbTarget({self}, password from {})", self.password_from)
    }
}

/// What the resolution reads of the environment (a seam for tests).
pub trait Env {
    fn var(&self, name: &str) -> Option<String>;
    fn home(&self) -> Option<PathBuf>;
}

/// The process's own environment.
pub struct ProcessEnv;

impl Env for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
    fn home(&self) -> Option<PathBuf> {
        self.var("HOME").map(PathBuf::from)
    }
}

/// Resolve `spec` (a URL or conninfo; `None`: only the environment) into a
/// target.  Errors never repeat `spec` (it may hold a password).
pub fn resolve(spec: Option<&str>, env: &dyn Env) -> Result<DbTarget, DbError> {
    let mut config = match spec {
        Some(s) => Config::from_str(s).map_err(|e| {
            DbError::Config(format!(
                "the database is neither a postgres:// URL nor a libpq key=value string ({e}); \
                 e.g. postgres://fsmatrix@db.lab:5432/fsmatrix"
            ))
        })?,
        None => Config::new(),
    };
    let mut password_from = if config.get_password().is_some() {
        "url"
    } else {
        "none"
    };
    if config.get_hosts().is_empty() {
        match env.var("PGHOST") {
            Some(h) => {
                for one in h.split(',') {
                    config.host(one);
                }
            }
            // libpq's default on Debian: the server's socket folder.
            None if Path::new("/var/run/postgresql").is_dir() => {
                config.host_path("/var/run/postgresql");
            }
            None => {
                config.host("localhost");
            }
        }
    }
    if config.get_ports().is_empty() {
        let port = match env.var("PGPORT") {
            Some(p) => p
                .parse::<u16>()
                .map_err(|_| DbError::Config(format!("PGPORT={p} is not a port number")))?,
            None => 5432,
        };
        config.port(port);
    }
    if config.get_user().is_none() {
        let user = env
            .var("PGUSER")
            .or_else(|| env.var("USER"))
            .or_else(|| env.var("LOGNAME"))
            .ok_or_else(|| {
                DbError::Config("no database user: give one in --db or PGUSER".into())
            })?;
        config.user(&user);
    }
    if config.get_dbname().is_none() {
        let db = env
            .var("PGDATABASE")
            .unwrap_or_else(|| config.get_user().unwrap_or_default().to_string());
        config.dbname(&db);
    }
    if config.get_password().is_none() {
        if let Some(p) = env.var("PGPASSWORD") {
            config.password(p);
            password_from = "PGPASSWORD";
        } else {
            let file = env
                .var("PGPASSFILE")
                .map(PathBuf::from)
                .or_else(|| env.home().map(|h| h.join(".pgpass")));
            if let Some(file) = file {
                if let Some(p) = password_from_file(&file, &config)? {
                    config.password(p);
                    password_from = "password file";
                }
            }
        }
    }
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(10));
    }
    config.application_name("fsmatrix");
    let root_cert = env
        .var("PGSSLROOTCERT")
        .map(PathBuf::from)
        .or_else(|| env.home().map(|h| h.join(".postgresql/root.crt")))
        .filter(|p| p.is_file());
    Ok(DbTarget {
        config,
        password_from,
        root_cert,
    })
}

/// The password of the first matching line of a libpq password file:
/// `hostname:port:database:username:password`, `*` matching anything, `\:`
/// and `\\` escaped.  libpq ignores a file others can read; so does this,
/// saying why.  A missing file is no password.
fn password_from_file(path: &Path, config: &Config) -> Result<Option<String>, DbError> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(None),
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "password file {} has group or world access; ignored (chmod 0600 it), as libpq does",
                path.display()
            );
            return Ok(None);
        }
    }
    if !meta.is_file() {
        return Ok(None);
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        DbError::Config(format!(
            "cannot read the password file {}: {e}",
            path.display()
        ))
    })?;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        // libpq matches a socket connection as "localhost".
        Some(Host::Unix(_)) | None => "localhost".into(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(5432)
        .to_string();
    let want = [
        host.as_str(),
        port.as_str(),
        config.get_dbname().unwrap_or_default(),
        config.get_user().unwrap_or_default(),
    ];
    for line in text.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() != 5 {
            continue;
        }
        if fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f == "*" || f == w)
        {
            return Ok(Some(fields[4].clone()));
        }
    }
    Ok(None)
}

/// One password-file line split on unescaped `:` (`\:` and `\\` unescaped).
fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().expect("one field").push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().expect("one field").push(c),
        }
    }
    out
}

/// Connect, with the connection driven on the runtime.  TLS as libpq's
/// `sslmode` says: `disable` never, `prefer` (the default) when the server
/// offers it, `require` always.  The server's certificate is verified
/// (chain and host name) when a root certificate file is there
/// (`PGSSLROOTCERT`, `~/.postgresql/root.crt`); without one, as libpq does,
/// the connection is encrypted but the server is not authenticated, and
/// `require` says so in a warning.
pub async fn connect(target: &DbTarget) -> Result<tokio_postgres::Client, DbError> {
    use tokio_postgres::config::SslMode;
    let fail = |e: tokio_postgres::Error| DbError::Connect {
        target: target.to_string(),
        reason: super::pg_reason(&e),
    };
    let client = match target.config.get_ssl_mode() {
        SslMode::Disable => {
            let (client, connection) = target
                .config
                .connect(tokio_postgres::NoTls)
                .await
                .map_err(fail)?;
            drive(connection);
            client
        }
        mode => {
            let tls = tls_config(target.root_cert.as_deref())?;
            if tls.1.is_none() && mode == SslMode::Require {
                tracing::warn!(
                    "sslmode=require without a root certificate (PGSSLROOTCERT, ~/.postgresql/root.crt): \
                     the connection to {target} is encrypted but the server is not authenticated"
                );
            }
            let make = tokio_postgres_rustls::MakeRustlsConnect::new(tls.0);
            let (client, connection) = target.config.connect(make).await.map_err(fail)?;
            drive(connection);
            client
        }
    };
    Ok(client)
}

fn drive<F>(connection: F)
where
    F: std::future::Future<Output = Result<(), tokio_postgres::Error>> + Send + 'static,
{
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("the results database connection ended: {e}");
        }
    });
}

/// The TLS client configuration, and the root file it verifies against.
fn tls_config(root: Option<&Path>) -> Result<(rustls::ClientConfig, Option<PathBuf>), DbError> {
    use std::sync::Arc;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| DbError::Config(format!("TLS set-up: {e}")))?;
    let Some(root) = root else {
        let config = builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(EncryptOnly(provider)))
            .with_no_client_auth();
        return Ok((config, None));
    };
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    let certs = rustls::pki_types::CertificateDer::pem_file_iter(root).map_err(|e| {
        DbError::Config(format!(
            "cannot read the root certificate file {}: {e}",
            root.display()
        ))
    })?;
    for c in certs {
        let c = c.map_err(|e| {
            DbError::Config(format!("{}: not a PEM certificate: {e}", root.display()))
        })?;
        roots
            .add(c)
            .map_err(|e| DbError::Config(format!("{}: {e}", root.display())))?;
    }
    if roots.is_empty() {
        return Err(DbError::Config(format!(
            "{} holds no certificate",
            root.display()
        )));
    }
    Ok((
        builder.with_root_certificates(roots).with_no_client_auth(),
        Some(root.to_path_buf()),
    ))
}

/// libpq's `sslmode=prefer|require` without a root certificate: the
/// handshake's signatures are checked, the certificate's issuer is not.
#[derive(Debug)]
struct EncryptOnly(std::sync::Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for EncryptOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    struct FakeEnv(HashMap<&'static str, String>, Option<PathBuf>);
    impl Env for FakeEnv {
        fn var(&self, name: &str) -> Option<String> {
            self.0.get(name).cloned()
        }
        fn home(&self) -> Option<PathBuf> {
            self.1.clone()
        }
    }

    fn env(vars: &[(&'static str, &str)], home: Option<&Path>) -> FakeEnv {
        FakeEnv(
            vars.iter().map(|(k, v)| (*k, v.to_string())).collect(),
            home.map(Path::to_path_buf),
        )
    }

    #[test]
    fn the_url_wins_and_the_environment_fills_in() {
        let e = env(
            &[("PGHOST", "db.lab"), ("PGPORT", "6543"), ("PGUSER", "ann")],
            None,
        );
        // A URL's host without a port is 5432 (the URL rule of
        // tokio-postgres); PGPORT fills in only where the value names no host.
        let t = resolve(Some("postgres://bob@10.0.0.1/results"), &e).unwrap();
        assert_eq!(t.to_string(), "bob@10.0.0.1:5432/results");
        let t = resolve(Some("dbname=results"), &e).unwrap();
        assert_eq!(t.to_string(), "ann@db.lab:6543/results");
        let t = resolve(None, &e).unwrap();
        assert_eq!(t.to_string(), "ann@db.lab:6543/ann");
        assert_eq!(t.password_from, "none");
    }

    #[test]
    fn passwords_come_from_the_url_pgpassword_or_a_private_password_file_and_never_show() {
        let dir = tempfile::tempdir().unwrap();
        let pass = dir.path().join(".pgpass");
        std::fs::write(
            &pass,
            "# comment\nother:*:*:*:no\ndb.lab:5432:results:ann:s3cr\\:et\n*:*:*:*:fallback\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o600)).unwrap();
        let e = env(&[("PGUSER", "ann")], Some(dir.path()));
        let t = resolve(Some("host=db.lab dbname=results"), &e).unwrap();
        assert_eq!(t.config.get_password(), Some(&b"s3cr:et"[..]));
        assert_eq!(t.password_from, "password file");
        assert!(!format!("{t} {t:?}").contains("s3cr"));
        let t = resolve(Some("host=elsewhere dbname=x"), &e).unwrap();
        assert_eq!(t.config.get_password(), Some(&b"fallback"[..]));
        // A file others can read is ignored, as libpq ignores it.
        std::fs::set_permissions(&pass, std::fs::Permissions::from_mode(0o644)).unwrap();
        let t = resolve(Some("host=db.lab dbname=results"), &e).unwrap();
        assert_eq!(t.config.get_password(), None);
        let e = env(&[("PGUSER", "ann"), ("PGPASSWORD", "pw")], None);
        let t = resolve(Some("postgres://u:inurl@h/d"), &e).unwrap();
        assert_eq!(t.password_from, "url");
        assert!(!format!("{t} {t:?}").contains("inurl"));
        let t = resolve(Some("postgres://u@h/d"), &e).unwrap();
        assert_eq!(t.password_from, "PGPASSWORD");
    }

    #[test]
    fn a_bad_spec_is_refused_without_echoing_it() {
        let e = env(&[("PGUSER", "ann")], None);
        let err = resolve(Some("postgres://u:topsecret@h:notaport/d"), &e).unwrap_err();
        assert!(!err.to_string().contains("topsecret"), "{err}");
        assert!(err.to_string().contains("postgres://"), "{err}");
        let err = resolve(None, &env(&[("PGUSER", "a"), ("PGPORT", "x")], None)).unwrap_err();
        assert!(err.to_string().contains("PGPORT=x"), "{err}");
    }
}
