//! `fsmatrix ls [DIR]`: the bundles under a folder, archives too, oldest
//! first, as a table as wide as the terminal (100 columns into a pipe or a
//! file) or, `--json`, one object per line.
use super::{CliError, CmdResult, Exit, LsArgs};
use crate::results::bundle::listing::{self, ListStatus};

/// 0 every bundle could be read, 1 some are listed as unreadable (why on
/// stderr too), 2 the folder cannot be listed.
pub fn ls(args: &LsArgs) -> CmdResult {
    let l = listing::list(&args.dir).map_err(CliError::failed_to)?;
    for w in &l.warnings {
        crate::stdio::errln!("fsmatrix: warning: {w}");
    }
    if args.json {
        for b in &l.bundles {
            crate::stdio::outln!("{}", b.json());
        }
    } else if l.bundles.is_empty() {
        crate::stdio::errln!("fsmatrix: no bundle under {}", args.dir.display());
    } else {
        crate::stdio::out!(
            "{}",
            listing::render_table(&l.bundles, &args.dir, super::terminal_width())
        );
    }
    let unreadable: Vec<_> = l
        .bundles
        .iter()
        .filter_map(|b| match &b.status {
            ListStatus::Unreadable(why) => Some((b, why)),
            _ => None,
        })
        .collect();
    if unreadable.is_empty() {
        return Ok(Exit::Success);
    }
    for (b, why) in &unreadable {
        crate::stdio::errln!("fsmatrix: {}: unreadable: {why}", b.path.display());
    }
    Err(CliError::problems(format!(
        "{} of {} bundles could not be read",
        unreadable.len(),
        l.bundles.len()
    )))
}

#[cfg(test)]
mod tests {
    /// `ls` looks where `run` writes by default.
    #[test]
    fn the_default_folder_is_the_one_run_writes_to() {
        let cli = <super::super::Cli as clap::CommandFactory>::command();
        let default = |sub: &str, arg: &str| -> Vec<String> {
            cli.find_subcommand(sub)
                .and_then(|c| c.get_arguments().find(|a| a.get_id() == arg))
                .map(|a| {
                    a.get_default_values()
                        .iter()
                        .map(|v| v.to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(default("ls", "dir"), ["results"]);
        assert_eq!(default("ls", "dir"), default("run", "out"));
    }
}
