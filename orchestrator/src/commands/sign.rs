//! `fsmatrix sign BUNDLE` (and `run --sign`, `resume --sign`): 0 signed,
//! 1 the bundle does not verify, 2 the key or the bundle cannot be used.
use std::path::Path;

use super::{CliError, CmdResult, Exit, SignArgs};
use crate::remote::ssh::agent_from_env;
use crate::results::bundle::archive;
use crate::results::bundle::signature::{self, SignError, Signed, Signer};

pub fn sign(args: &SignArgs) -> CmdResult {
    if archive::is_archive(&args.bundle) {
        return Err(CliError::nothing_ran(format!(
            "failed to sign {}: it is an archive; sign the bundle's folder, then archive it \
             (the archive keeps the signature)",
            args.bundle.display()
        )));
    }
    let rt = super::runtime()?;
    let signer = rt.block_on(signer(args.key.as_deref(), args.agent))?;
    let signed = sign_bundle(&rt, &args.bundle, &signer)?;
    crate::stdio::outln!("{}", signed.path.display());
    Ok(Exit::Success)
}

/// The key `--key` / `--agent` name, ssh-agent at `SSH_AUTH_SOCK`; a note
/// (which of the agent's keys) goes to stderr.
pub(super) async fn signer(key: Option<&Path>, agent: bool) -> Result<Signer, CliError> {
    let sock = agent_from_env();
    if agent {
        let Some(sock) = sock else {
            return Err(CliError::nothing_ran(
                "failed to sign with ssh-agent: SSH_AUTH_SOCK is unset or empty (start ssh-agent \
                 and add a key with ssh-add, or give --key FILE without --agent)",
            ));
        };
        let (signer, note) = Signer::from_agent(&sock, key)
            .await
            .map_err(CliError::failed_to)?;
        if let Some(n) = note {
            crate::stdio::errln!("fsmatrix: note: {n}");
        }
        return Ok(signer);
    }
    let Some(key) = key else {
        return Err(CliError::nothing_ran(
            "failed to sign: give --key FILE or --agent",
        ));
    };
    Signer::from_key_file(key, sock.as_deref())
        .await
        .map_err(CliError::failed_to)
}

/// Sign `bundle` with `signer`; says on stderr with which key.
pub(super) fn sign_bundle(
    rt: &tokio::runtime::Runtime,
    bundle: &Path,
    signer: &Signer,
) -> Result<Signed, CliError> {
    match rt.block_on(signature::sign_bundle(bundle, signer)) {
        Ok(s) => {
            crate::stdio::errln!(
                "fsmatrix: signed {} with the {}{}",
                bundle.display(),
                s.signer,
                if s.replaced {
                    " (the earlier signature is replaced)"
                } else {
                    ""
                }
            );
            Ok(s)
        }
        Err(e @ SignError::NotVerified { .. }) => Err(CliError::problems(format!("failed to {e}"))),
        Err(e) => Err(CliError::failed_to(e)),
    }
}
