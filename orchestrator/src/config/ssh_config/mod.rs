//! An inventory host's `address` may be an alias of the user's OpenSSH
//! client configuration (`~/.ssh/config`, or the file the inventory names
//! with `ssh_config = PATH`, as `ssh -F` does, when the user names it too
//! with `--ssh-config`).  The alias is resolved by
//! OpenSSH itself: fsmatrix runs `ssh -G [-F FILE] -- ALIAS`, which prints
//! the configuration after evaluating `Include`, `Host` patterns (wildcards,
//! `!` negation), `Match` blocks and first-value-wins, and exits without
//! connecting.  Note that `ssh -G` evaluates `Match exec` too: the command
//! runs, as it would for `ssh ALIAS`.  That is why only a config the user
//! named is read (see `config::inventory::GivenPaths`), and why each
//! `ssh -G` runs in a process group of its own that is killed once it has
//! answered or at [`TIMEOUT`]: no command it started outlives it.
//!
//! To tell what the configuration set from OpenSSH's defaults, the alias is
//! resolved a second time with `-F /dev/null` and the two are compared: a
//! value equal to the default reads as "default" (harmless: it is the same
//! value).  Without `ssh_config` in the inventory, `ssh` runs without `-F`,
//! exactly as `ssh ALIAS` would, so /etc/ssh/ssh_config counts too.
//!
//! Values taken: HostName, User, Port, IdentityFile, IdentitiesOnly,
//! UserKnownHostsFile, ProxyJump.  An alias may be anything OpenSSH takes
//! as a host argument ([`validate_alias`]: `web_1` too); its HostName goes
//! through the address validator.  Every IdentityFile that exists is kept,
//! in order (`Host::more_identity_files` after the first), and offered in
//! that order when connecting.  A ProxyJump is followed hop by hop
//! ([`Resolver::jump_chain`]): each entry resolved with `ssh -G -l USER -p
//! PORT` through the same config, the first entry's own ProxyJump
//! followed before it (ssh reaches the last entry with `-J` the others,
//! which overrides their own), with loop detection and at most
//! `MAX_JUMP_HOPS` hops; each hop keeps its own keys and known_hosts
//! (`JumpSpec::config`).  Inventory keys (a host's own or
//! `[defaults]`) win.  A configuration that weakens host-key checking
//! (`StrictHostKeyChecking no|accept-new`, `UserKnownHostsFile /dev/null`)
//! is ignored with a warning: fsmatrix's checking stays strict.
//!
//! Measured (OpenSSH 9.2p1, this machine, 2 cores): one `ssh -G` takes
//! about 5-10 ms; hosts are resolved 8 at a time, two processes each (32
//! aliases: about 0.25 s).
//!
//! Why not a config crate: ssh2-config (read in its source, not run) gets
//! wildcards, `!` negation and first-value-wins right, but has no `Match`
//! (the lines under it merge into the Host block before), merges an
//! `Include`d file by the including block's pattern rather than by the
//! alias and resolves a relative Include against the current folder (not
//! ~/.ssh), keeps only one block's IdentityFile lines, expands no `%`
//! tokens and does not read IdentitiesOnly, UserKnownHostsFile or
//! StrictHostKeyChecking.  russh-config has no Include and no Match.
//!
//! `resolve` runs `ssh -G` and reads what the configuration set; `apply`
//! fills a host from it and says where each value came from.
mod apply;
mod resolve;

#[cfg(test)]
mod test_support;

pub use apply::{
    apply, expand_identity, jump_spec, provenance_lines, report, InventorySet, Sourced,
};
pub use resolve::{
    diff, parse_dump, validate_alias, ConfigFile, Dump, Resolved, ResolvedHop, Resolver,
    SshConfigError, TIMEOUT,
};
