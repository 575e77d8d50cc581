//! PostgreSQL settings that do more than tune the server: they run a
//! command, load code, name a file or folder of the host, or open the server
//! to others.  A matrix is the benchmarker's file, the inventory the host
//! owner's: such a setting runs only on a host whose inventory entry (or
//! `[defaults]`) lists it in `allow_postgres_settings` (the host owner's
//! consent: a matrix may not open a side door onto the host).  Names are compared as PostgreSQL compares them: without case
//! (guc.c `guc_name_compare` folds ASCII letters), so `Archive_Command` is
//! `archive_command`; the matrix loader stores them lowercased.
//!
//! The settings fsmatrix writes itself (the port, the listen address and the
//! socket folder it connects through, the data folder on the filesystem under
//! test) are never allowed: `pg_port` in the inventory sets the port.
//!
//! Decided: `data_sync_retry` is a durability choice, not a side door (it
//! names nothing and runs nothing), so it stays allowed like `fsync`.
use std::fmt;

use super::values::{PgSettingName, ValueError};

/// Why a setting needs the host owner's consent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PgClass {
    /// `*_command`: a shell command the server runs.
    RunsCommand,
    /// Preloaded libraries, `dynamic_library_path`, `jit_provider`,
    /// `archive_library`: code the server loads.
    LoadsCode,
    /// Files and folders of the host (`hba_file`, `log_directory`,
    /// `ssl_*_file`, any `*_file`, `*_dir*`, `*_path` setting, or a value
    /// that is an absolute path).
    NamesFile,
    /// `include`, `include_dir`, `include_if_exists`: other configuration files.
    IncludesFile,
    /// Who may connect through the socket (`unix_socket_group`, `unix_socket_permissions`).
    OpensServer,
    /// Written by fsmatrix itself; never allowed.
    Fsmatrix,
}

impl PgClass {
    pub fn as_str(self) -> &'static str {
        match self {
            PgClass::RunsCommand => "runs a command on the host",
            PgClass::LoadsCode => "loads code into the server",
            PgClass::NamesFile => "names a file or folder of the host",
            PgClass::IncludesFile => "includes another configuration file",
            PgClass::OpensServer => "changes who may connect to the server",
            PgClass::Fsmatrix => "is set by fsmatrix itself",
        }
    }
}

impl fmt::Display for PgClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Written by fsmatrix into every cluster's configuration (remote-scripts
/// `write_pg_conf`) or fixed by where fsmatrix puts the cluster.
pub const FSMATRIX_SETTINGS: &[&str] = &[
    "port",
    "listen_addresses",
    "unix_socket_directories",
    "data_directory",
    "config_file",
];

const LOADS_CODE: &[&str] = &[
    "shared_preload_libraries",
    "session_preload_libraries",
    "local_preload_libraries",
    "dynamic_library_path",
    "jit_provider",
    "archive_library",
];

const NAMES_FILE: &[&str] = &[
    "hba_file",
    "ident_file",
    "external_pid_file",
    "log_directory",
    "log_filename",
    "stats_temp_directory",
    "krb_server_keyfile",
    "ssl_crl_dir",
];

const INCLUDES: &[&str] = &["include", "include_dir", "include_if_exists"];

const OPENS: &[&str] = &["unix_socket_group", "unix_socket_permissions"];

/// The class of a setting by its name (any case), `None` for a setting
/// that only tunes the server.
pub fn class_of(name: &str) -> Option<PgClass> {
    let n = name.to_ascii_lowercase();
    let n = n.as_str();
    // An extension's setting (`auto_explain.log_min_duration`) is judged by
    // its last part.
    let last = n.rsplit('.').next().unwrap_or(n);
    if FSMATRIX_SETTINGS.contains(&n) {
        return Some(PgClass::Fsmatrix);
    }
    if last.ends_with("_command") {
        return Some(PgClass::RunsCommand);
    }
    if LOADS_CODE.contains(&n) || last.ends_with("_library") || last.ends_with("_libraries") {
        return Some(PgClass::LoadsCode);
    }
    if INCLUDES.contains(&n) {
        return Some(PgClass::IncludesFile);
    }
    if OPENS.contains(&n) {
        return Some(PgClass::OpensServer);
    }
    // `search_path` is a list of schemas, not of folders.
    if n == "search_path" {
        return None;
    }
    let names_file = NAMES_FILE.contains(&n)
        || (last.starts_with("ssl_") && last.ends_with("_file"))
        || [
            "_file",
            "_dir",
            "_directory",
            "_directories",
            "_path",
            "_keyfile",
        ]
        .iter()
        .any(|s| last.ends_with(s))
        || last == "file"
        || last == "directory";
    names_file.then_some(PgClass::NamesFile)
}

/// The class of a setting given its value too: any value that is an
/// absolute or home path names a file of the host.
pub fn class_with_value(name: &str, value: &str) -> Option<PgClass> {
    class_of(name).or_else(|| value.starts_with(['/', '~']).then_some(PgClass::NamesFile))
}

/// An entry of an inventory's `allow_postgres_settings`: a setting name in
/// any case (stored lowercased) whose class needs allowing, and not one
/// fsmatrix sets itself.
pub fn allowable(s: &str) -> Result<PgSettingName, ValueError> {
    let name = PgSettingName::new(&s.to_ascii_lowercase())?;
    match class_of(name.as_str()) {
        Some(PgClass::Fsmatrix) => Err(ValueError(format!(
            "postgresql setting `{s}` {}: it cannot be allowed (the port is `pg_port`); \
             valid: settings that run commands, load code, name files or folders, include \
             files or open the socket (e.g. shared_preload_libraries, archive_command)",
            PgClass::Fsmatrix
        ))),
        Some(_) => Ok(name),
        None => Err(ValueError(format!(
            "postgresql setting `{s}` needs no allowing (it only tunes the server) or is \
             misspelt; valid: settings that run commands, load code, name files or folders, \
             include files or open the socket (e.g. shared_preload_libraries, archive_command)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_by_name_in_any_case() {
        use PgClass::*;
        for (name, want) in [
            ("archive_command", Some(RunsCommand)),
            ("Archive_Command", Some(RunsCommand)),
            ("restore_command", Some(RunsCommand)),
            ("archive_cleanup_command", Some(RunsCommand)),
            ("recovery_end_command", Some(RunsCommand)),
            ("ssl_passphrase_command", Some(RunsCommand)),
            ("archive_library", Some(LoadsCode)),
            ("shared_preload_libraries", Some(LoadsCode)),
            ("SESSION_PRELOAD_LIBRARIES", Some(LoadsCode)),
            ("local_preload_libraries", Some(LoadsCode)),
            ("dynamic_library_path", Some(LoadsCode)),
            ("jit_provider", Some(LoadsCode)),
            ("listen_addresses", Some(Fsmatrix)),
            ("Port", Some(Fsmatrix)),
            ("unix_socket_directories", Some(Fsmatrix)),
            ("data_directory", Some(Fsmatrix)),
            ("config_file", Some(Fsmatrix)),
            ("unix_socket_group", Some(OpensServer)),
            ("unix_socket_permissions", Some(OpensServer)),
            ("hba_file", Some(NamesFile)),
            ("ident_file", Some(NamesFile)),
            ("external_pid_file", Some(NamesFile)),
            ("log_directory", Some(NamesFile)),
            ("stats_temp_directory", Some(NamesFile)),
            ("ssl_cert_file", Some(NamesFile)),
            ("ssl_key_file", Some(NamesFile)),
            ("ssl_ca_file", Some(NamesFile)),
            ("ssl_crl_file", Some(NamesFile)),
            ("ssl_dh_params_file", Some(NamesFile)),
            ("krb_server_keyfile", Some(NamesFile)),
            ("include", Some(IncludesFile)),
            ("include_dir", Some(IncludesFile)),
            ("include_if_exists", Some(IncludesFile)),
            ("pg_stat_statements.save_file", Some(NamesFile)),
            ("shared_buffers", None),
            ("full_page_writes", None),
            ("wal_compression", None),
            ("data_sync_retry", None),
            ("timezone", None),
            ("search_path", None),
            ("auto_explain.log_min_duration", None),
        ] {
            assert_eq!(class_of(name), want, "{name}");
        }
        assert_eq!(
            class_with_value("default_tablespace", "/srv/x"),
            Some(NamesFile)
        );
        assert_eq!(class_with_value("timezone", "Europe/Paris"), None);
    }

    #[test]
    fn only_classed_settings_can_be_allowed() {
        assert_eq!(
            allowable("Shared_Preload_Libraries").map(|n| n.to_string()),
            Ok("shared_preload_libraries".to_string())
        );
        let e = allowable("port").unwrap_err().0;
        assert!(e.contains("cannot be allowed"), "{e}");
        let e = allowable("shared_bufers").unwrap_err().0;
        assert!(e.contains("needs no allowing"), "{e}");
    }
}
