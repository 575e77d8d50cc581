//! Signed bundles: an SSH signature of `tagmanifest-sha256.txt`, in the
//! sshsig format of `ssh-keygen -Y sign` (namespace [`NAMESPACE`]), stored
//! beside it as [`SIGNATURE_FILE`].
//!
//! The tagmanifest holds the sha256 of `bag-info.txt` and of
//! `manifest-sha256.txt`, which holds the sha256 of every payload file, so a
//! good signature plus a bag that verifies vouch for every byte of the
//! payload.  Anyone can check it without fsmatrix:
//! `ssh-keygen -Y verify -f allowed_signers -I PRINCIPAL -n fsmatrix -s
//! tagmanifest-sha256.txt.sig < tagmanifest-sha256.txt`.
//!
//! The signature file is the one file the manifests cannot list (it signs
//! the last of them): `verify` lets it stand unlisted beside the
//! tagmanifest (any other unlisted file outside data/ is reported), and
//! closing a bundle again (resume) removes a signature it would make stale.
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use russh::keys::agent::client::AgentClient;
use russh::keys::agent::AgentIdentity;
use russh::keys::ssh_key::public::KeyData;
use russh::keys::ssh_key::{LineEnding, SshSig};
use russh::keys::{Algorithm, HashAlg, PrivateKey, PublicKey};

use super::allowed_signers::{AllowedSigners, NotAllowed};
use super::bag::{write_atomic, BAGIT_FILE, BAG_INFO_FILE, MANIFEST_FILE, TAGMANIFEST_FILE};
use super::manifest;
use crate::keys::{classify_identity, IdentityKey};

/// The signature's file, beside the tagmanifest it signs.
pub const SIGNATURE_FILE: &str = "tagmanifest-sha256.txt.sig";
/// The sshsig namespace of bundle signatures (`ssh-keygen -n fsmatrix`).
pub const NAMESPACE: &str = "fsmatrix";
/// The largest signature file read (an RSA-16384 signature is under 6 KiB).
pub const MAX_SIGNATURE_BYTES: u64 = 64 << 10;
/// The largest tagmanifest signed or checked (fsmatrix's is 4 lines).
pub const MAX_TAGMANIFEST_BYTES: u64 = 16 << 20;
const MAX_KEY_FILE_BYTES: u64 = 1 << 20;
/// How long ssh-agent may take to answer (it may ask its user to confirm).
const AGENT_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a bundle could not be signed.  Messages read after "failed to".
#[derive(Debug, thiserror::Error)]
pub enum SignError {
    #[error("use the key {}: {why}", path.display())]
    Key { path: PathBuf, why: String },
    #[error("sign with ssh-agent: {why}")]
    Agent { why: String },
    #[error("sign {}: {why}", path.display())]
    Bundle { path: PathBuf, why: String },
    #[error("sign {}: it does not verify ({problems}); run `fsmatrix verify` on it", path.display())]
    NotVerified { path: PathBuf, problems: String },
}

/// `ED25519 key SHA256:…`: a key as `ssh-keygen -l` names it.
pub fn describe_key(key: &KeyData) -> String {
    let kind = match key.algorithm() {
        Algorithm::Ed25519 => "ED25519".to_string(),
        Algorithm::Rsa { .. } => "RSA".to_string(),
        Algorithm::Ecdsa { .. } => "ECDSA".to_string(),
        Algorithm::SkEd25519 => "ED25519-SK".to_string(),
        Algorithm::SkEcdsaSha2NistP256 => "ECDSA-SK".to_string(),
        Algorithm::Dsa => "DSA".to_string(),
        other => other.to_string(),
    };
    format!("{kind} key {}", key.fingerprint(HashAlg::Sha256))
}

/// [`describe_key`] with the key's comment, if it has one.
fn describe_public(key: &PublicKey) -> String {
    let comment = key.comment().as_str_lossy().trim();
    if comment.is_empty() {
        describe_key(key.key_data())
    } else {
        format!("{} ({comment})", describe_key(key.key_data()))
    }
}

#[derive(Debug, Clone)]
enum How {
    File { key: Arc<PrivateKey>, path: PathBuf },
    Agent { socket: PathBuf },
}

/// A key that can sign bundles: a private key file, or a key ssh-agent holds.
#[derive(Debug, Clone)]
pub struct Signer {
    public: PublicKey,
    how: How,
}

type Agent = AgentClient<tokio::net::UnixStream>;

async fn agent_connect(socket: &Path) -> Result<Agent, SignError> {
    match tokio::time::timeout(AGENT_TIMEOUT, Agent::connect_uds(socket)).await {
        Ok(Ok(a)) => Ok(a),
        Ok(Err(e)) => Err(SignError::Agent {
            why: format!("cannot reach ssh-agent at {}: {e}", socket.display()),
        }),
        Err(_) => Err(SignError::Agent {
            why: format!("ssh-agent at {} did not answer", socket.display()),
        }),
    }
}

/// The plain keys ssh-agent holds (a certificate's key counts, ssh-add
/// loads both), in the agent's order, with their comments.
async fn agent_keys(agent: &mut Agent, socket: &Path) -> Result<Vec<PublicKey>, SignError> {
    let ids = match tokio::time::timeout(AGENT_TIMEOUT, agent.request_identities()).await {
        Ok(Ok(ids)) => ids,
        Ok(Err(e)) => {
            return Err(SignError::Agent {
                why: format!(
                    "cannot list the keys of ssh-agent at {}: {e}",
                    socket.display()
                ),
            })
        }
        Err(_) => {
            return Err(SignError::Agent {
                why: format!("ssh-agent at {} did not answer", socket.display()),
            })
        }
    };
    let mut keys: Vec<PublicKey> = Vec::new();
    for id in ids {
        let key = match id {
            AgentIdentity::PublicKey { mut key, comment } => {
                key.set_comment(comment.as_str());
                key
            }
            AgentIdentity::Certificate {
                certificate,
                comment,
            } => PublicKey::new(certificate.public_key().clone(), comment.as_str()),
        };
        if !keys.iter().any(|k| k.key_data() == key.key_data()) {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// The public key a file names: a `.pub` line, or a private key file (its
/// public half, or the `.pub` beside it when the file is encrypted PEM).
fn public_key_of(path: &Path) -> Result<PublicKey, SignError> {
    let bad = |why: String| SignError::Key {
        path: path.to_owned(),
        why,
    };
    let text = read_text(path, MAX_KEY_FILE_BYTES).map_err(bad)?;
    if text.contains("PRIVATE KEY-----") {
        let pub_text = pub_beside(path);
        return match classify_identity(&text, pub_text.as_deref()).map_err(bad)? {
            IdentityKey::Plain(k) => Ok(k.public_key().clone()),
            IdentityKey::Encrypted(Some(p)) => Ok(p),
            IdentityKey::Encrypted(None) => Err(bad(format!(
                "it is encrypted and its public key is not readable without the passphrase: \
                 give its .pub file ({}.pub) instead",
                path.display()
            ))),
        };
    }
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
        .ok_or_else(|| bad("it holds no key".into()))?;
    PublicKey::from_openssh(line).map_err(|e| {
        bad(format!(
            "not an OpenSSH public key (`ssh-ed25519 AAAA… comment`) nor a private key: {e}"
        ))
    })
}

fn read_text(path: &Path, limit: u64) -> Result<String, String> {
    let bytes = crate::files::read_regular(path, limit)?;
    String::from_utf8(bytes).map_err(|_| "not a text file".to_string())
}

fn pub_beside(path: &Path) -> Option<String> {
    let mut p = path.as_os_str().to_owned();
    p.push(".pub");
    read_text(Path::new(&p), MAX_KEY_FILE_BYTES).ok()
}

impl Signer {
    /// A private key file (OpenSSH, PEM or PKCS#8: Ed25519, ECDSA, RSA).
    /// An encrypted one is used through ssh-agent at `agent_socket` if the
    /// agent holds it; fsmatrix never asks for a passphrase.
    pub async fn from_key_file(
        path: &Path,
        agent_socket: Option<&Path>,
    ) -> Result<Signer, SignError> {
        let bad = |why: String| SignError::Key {
            path: path.to_owned(),
            why,
        };
        let text = read_text(path, MAX_KEY_FILE_BYTES).map_err(&bad)?;
        if !text.contains("PRIVATE KEY-----") {
            return Err(bad(
                "it is not a private key file (a .pub file? give the private key, or \
                 --agent with the .pub file to sign with ssh-agent)"
                    .into(),
            ));
        }
        let pub_text = pub_beside(path);
        let p = path.display();
        let encrypted = |why: String| {
            bad(format!(
                "it is encrypted (it has a passphrase) and {why}: load it with `ssh-add {p}` \
                 (fsmatrix never asks for passphrases)"
            ))
        };
        match classify_identity(&text, pub_text.as_deref()).map_err(&bad)? {
            IdentityKey::Plain(key) => {
                if key.public_key().key_data().is_sk_ed25519()
                    || key.public_key().key_data().is_sk_ecdsa_p256()
                {
                    return Err(bad(
                        "a security-key (FIDO) key signs only through ssh-agent; add it with \
                         ssh-add and use --agent"
                            .into(),
                    ));
                }
                Ok(Signer {
                    public: key.public_key().clone(),
                    how: How::File {
                        key,
                        path: path.to_owned(),
                    },
                })
            }
            IdentityKey::Encrypted(public) => {
                let Some(public) = public else {
                    return Err(encrypted(format!(
                        "its public key is not readable without the passphrase either (put it \
                         in {p}.pub so that it can be found in ssh-agent)"
                    )));
                };
                let Some(socket) = agent_socket else {
                    return Err(encrypted(
                        "no ssh-agent is running here (SSH_AUTH_SOCK is unset)".into(),
                    ));
                };
                let mut agent = agent_connect(socket)
                    .await
                    .map_err(|e| encrypted(e.to_string()))?;
                let held = agent_keys(&mut agent, socket)
                    .await
                    .map_err(|e| encrypted(e.to_string()))?;
                match held.into_iter().find(|k| k.key_data() == public.key_data()) {
                    Some(k) => Ok(Signer {
                        public: k,
                        how: How::Agent {
                            socket: socket.to_owned(),
                        },
                    }),
                    None => Err(encrypted(format!(
                        "ssh-agent at {} does not hold it",
                        socket.display()
                    ))),
                }
            }
        }
    }

    /// A key ssh-agent at `socket` holds: the one whose public key `key`
    /// names (a `.pub` file or a private key file), else its only key, else
    /// its first.  The note says which key was chosen when there were several.
    pub async fn from_agent(
        socket: &Path,
        key: Option<&Path>,
    ) -> Result<(Signer, Option<String>), SignError> {
        let wanted = key.map(public_key_of).transpose()?;
        let mut agent = agent_connect(socket).await?;
        let held = agent_keys(&mut agent, socket).await?;
        let signer = |public: PublicKey| Signer {
            public,
            how: How::Agent {
                socket: socket.to_owned(),
            },
        };
        if let (Some(w), Some(path)) = (wanted, key) {
            return match held.into_iter().find(|k| k.key_data() == w.key_data()) {
                Some(k) => Ok((signer(k), None)),
                None => Err(SignError::Agent {
                    why: format!(
                        "ssh-agent at {} does not hold the {} of {}: load it with `ssh-add` \
                         (fsmatrix never asks for passphrases)",
                        socket.display(),
                        describe_key(w.key_data()),
                        path.display()
                    ),
                }),
            };
        }
        let n = held.len();
        let Some(first) = held.into_iter().next() else {
            return Err(SignError::Agent {
                why: format!(
                    "ssh-agent at {} holds no keys: load one with ssh-add",
                    socket.display()
                ),
            });
        };
        let note = (n > 1).then(|| {
            format!(
                "ssh-agent holds {n} keys; signing with the first, {} (choose another with \
                 --key FILE.pub)",
                describe_public(&first)
            )
        });
        Ok((signer(first), note))
    }

    pub fn public_key(&self) -> &PublicKey {
        &self.public
    }

    /// The key and where it signs: `ED25519 key SHA256:… (comment) from FILE`
    /// or `… held by ssh-agent`.
    pub fn describe(&self) -> String {
        match &self.how {
            How::File { path, .. } => {
                format!("{} from {}", describe_public(&self.public), path.display())
            }
            How::Agent { .. } => format!("{} held by ssh-agent", describe_public(&self.public)),
        }
    }

    /// An sshsig signature of `msg` in [`NAMESPACE`], sha512 as
    /// `ssh-keygen -Y sign` makes it (RSA: rsa-sha2-512), checked before it
    /// is returned.
    pub async fn sign(&self, msg: &[u8]) -> Result<SshSig, SignError> {
        let sig = match &self.how {
            How::File { key, path } => {
                key.sign(NAMESPACE, HashAlg::Sha512, msg)
                    .map_err(|e| SignError::Key {
                        path: path.clone(),
                        why: format!("cannot sign with it: {e}"),
                    })?
            }
            How::Agent { socket } => self.sign_with_agent(socket, msg).await?,
        };
        self.public.verify(NAMESPACE, msg, &sig).map_err(|e| {
            let why = format!("the signature made does not verify ({e}); nothing was written");
            match &self.how {
                How::File { path, .. } => SignError::Key {
                    path: path.clone(),
                    why,
                },
                How::Agent { .. } => SignError::Agent { why },
            }
        })?;
        Ok(sig)
    }

    async fn sign_with_agent(&self, socket: &Path, msg: &[u8]) -> Result<SshSig, SignError> {
        let agent_err = |why: String| SignError::Agent { why };
        // What the agent signs: the sshsig envelope ("SSHSIG", namespace,
        // reserved, hash algorithm, H(message)).
        let data = SshSig::signed_data(NAMESPACE, HashAlg::Sha512, msg)
            .map_err(|e| agent_err(format!("cannot build the data to sign: {e}")))?;
        let mut agent = agent_connect(socket).await?;
        let rsa = self.public.key_data().is_rsa();
        let hash = rsa.then_some(HashAlg::Sha512);
        let signature = match tokio::time::timeout(
            AGENT_TIMEOUT,
            agent.sign_request_signature(&self.public, hash, &data),
        )
        .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => {
                return Err(agent_err(format!(
                    "ssh-agent at {} did not sign with the {} ({e}): does it still hold the \
                     key, or was a confirmation declined?",
                    socket.display(),
                    describe_key(self.public.key_data())
                )))
            }
            Err(_) => {
                return Err(agent_err(format!(
                    "ssh-agent at {} did not answer within {} s",
                    socket.display(),
                    AGENT_TIMEOUT.as_secs()
                )))
            }
        };
        if rsa
            && signature.algorithm()
                != (Algorithm::Rsa {
                    hash: Some(HashAlg::Sha512),
                })
        {
            return Err(agent_err(format!(
                "ssh-agent signed with {} instead of rsa-sha2-512",
                signature.algorithm()
            )));
        }
        SshSig::new(
            self.public.key_data().clone(),
            NAMESPACE,
            HashAlg::Sha512,
            signature,
        )
        .map_err(|e| agent_err(format!("cannot assemble the signature: {e}")))
    }
}

/// What [`sign_bundle`] wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The signature file.
    pub path: PathBuf,
    /// A previous signature was replaced.
    pub replaced: bool,
    /// [`Signer::describe`] of the key that signed.
    pub signer: String,
}

/// The tagmanifest's bytes, read only if it is a regular file in the bag.
fn read_tagmanifest(dir: &Path) -> Result<Vec<u8>, String> {
    if let Some(why) = manifest::unsafe_entry(dir, TAGMANIFEST_FILE) {
        return Err(why);
    }
    crate::files::read_regular(&dir.join(TAGMANIFEST_FILE), MAX_TAGMANIFEST_BYTES)
        .map_err(|e| format!("cannot read {TAGMANIFEST_FILE}: {e}"))
}

/// A signed tagmanifest must list the files that carry the rest of the
/// bag (bag-info.txt and the payload manifest), or the signature would
/// not vouch for the payload.
fn check_coverage(tagmanifest: &[u8]) -> Result<(), String> {
    let text =
        std::str::from_utf8(tagmanifest).map_err(|_| format!("{TAGMANIFEST_FILE} is not UTF-8"))?;
    let (entries, _bad) = manifest::parse(text);
    for f in [MANIFEST_FILE, BAG_INFO_FILE, BAGIT_FILE] {
        if !entries.contains_key(f) {
            return Err(format!(
                "{TAGMANIFEST_FILE} does not list {f}, so a signature of it would not cover {f}"
            ));
        }
    }
    Ok(())
}

/// Sign the bundle at `dir`: it must verify first (a signature vouches for
/// the bytes it covers); then the tagmanifest is signed and the signature
/// written (atomically) to [`SIGNATURE_FILE`], replacing any earlier one.
pub async fn sign_bundle(dir: &Path, signer: &Signer) -> Result<Signed, SignError> {
    let bad = |why: String| SignError::Bundle {
        path: dir.to_owned(),
        why,
    };
    // Read before and after verify: the bytes signed are the ones verified.
    // (If it cannot be read, verify says why.)
    let before = read_tagmanifest(dir).ok();
    let report = super::verify::verify(dir).map_err(|e| bad(e.why))?;
    if !report.is_ok() {
        let mut problems: Vec<String> = report
            .problems
            .iter()
            .take(3)
            .map(|p| p.to_string())
            .collect();
        if report.problems.len() > 3 {
            problems.push(format!("{} more", report.problems.len() - 3));
        }
        return Err(SignError::NotVerified {
            path: dir.to_owned(),
            problems: problems.join("; "),
        });
    }
    let bytes = read_tagmanifest(dir).map_err(bad)?;
    if before.as_ref() != Some(&bytes) {
        return Err(bad(format!(
            "{TAGMANIFEST_FILE} changed while it was verified; try again"
        )));
    }
    check_coverage(&bytes).map_err(bad)?;
    let sig = signer.sign(&bytes).await?;
    let pem = sig
        .to_pem(LineEnding::LF)
        .map_err(|e| bad(format!("cannot encode the signature: {e}")))?;
    let path = dir.join(SIGNATURE_FILE);
    let replaced = std::fs::symlink_metadata(&path).is_ok();
    write_atomic(dir, SIGNATURE_FILE, pem.as_bytes())
        .map_err(|e| bad(format!("cannot write {SIGNATURE_FILE}: {e}")))?;
    Ok(Signed {
        path,
        replaced,
        signer: signer.describe(),
    })
}

/// Remove the bundle's signature (it would sign a tagmanifest about to be
/// rewritten); `true` if there was one.
pub fn remove_signature(dir: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(dir.join(SIGNATURE_FILE)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// What [`check_signature`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignatureCheck {
    /// No signature, and none was asked for.
    Unsigned,
    /// A signature that matches the tagmanifest, by `key` ([`describe_key`]),
    /// not checked against allowed signers.
    Unchecked { key: String },
    /// By `key`, which the allowed signers list for `principals` (the
    /// principals field of each line that allows it).
    Trusted {
        key: String,
        principals: Vec<String>,
        lines: Vec<usize>,
    },
}

/// Why a bundle's signature is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureProblem {
    #[error("not signed: there is no {SIGNATURE_FILE} (sign it with `fsmatrix sign`)")]
    Missing,
    #[error("{SIGNATURE_FILE}: {0}")]
    Unreadable(String),
    #[error("{SIGNATURE_FILE} is not an SSH signature (-----BEGIN SSH SIGNATURE-----): {0}")]
    Malformed(String),
    #[error("{SIGNATURE_FILE} was made for namespace {found:?}, not {NAMESPACE:?}")]
    Namespace { found: String },
    #[error("{SIGNATURE_FILE} was made with a certificate; certificates (cert-authority) are not supported, sign with a plain key")]
    Certificate,
    #[error("{SIGNATURE_FILE} is an RSA signature with SHA-1 (ssh-rsa); only rsa-sha2-256 and rsa-sha2-512 are accepted")]
    WeakRsa,
    #[error("{0}")]
    DoesNotCover(String),
    #[error("{SIGNATURE_FILE} does not match {TAGMANIFEST_FILE} (signed by {key}): the tagmanifest, or bag-info.txt / manifest-sha256.txt it lists, changed after signing")]
    BadSignature { key: String },
    #[error("signed by {key}, which {} does not list{}{}", file.display(), if *cert_authority_lines > 0 { format!(" (its {cert_authority_lines} cert-authority line(s) are not supported and were skipped)") } else { String::new() }, if *skipped_lines > 0 { format!(" ({skipped_lines} line(s) that ssh-keygen cannot read either were skipped)") } else { String::new() })]
    UnknownKey {
        key: String,
        file: PathBuf,
        cert_authority_lines: usize,
        skipped_lines: usize,
    },
    #[error("signed by {key}, which {} lists but does not allow to sign {NAMESPACE:?} now: {}", file.display(), reasons.iter().map(|(line, p, why)| format!("line {line} ({}): {why}", crate::text::terminal_safe(p))).collect::<Vec<_>>().join("; "))]
    NotAllowed {
        key: String,
        file: PathBuf,
        reasons: Vec<(usize, String, NotAllowed)>,
    },
}

/// The armor of 9.2p1's sshsig.c `sshsig_dearmor`: the file must begin
/// with exactly `-----BEGIN SSH SIGNATURE-----\n` (no white space before,
/// and no `\r` before that `\n`: 9.2p1 refuses a CRLF header, 10.0 takes
/// it); the body runs to the first `\n-----END SSH SIGNATURE-----` and
/// anything after that is ignored; the body is base64 as `b64_pton` reads
/// it (white space anywhere, so any line width and CRLF inside).
pub fn dearmor(armored: &[u8]) -> Result<Vec<u8>, String> {
    const BEGIN: &[u8] = b"-----BEGIN SSH SIGNATURE-----\n";
    const END: &[u8] = b"\n-----END SSH SIGNATURE-----";
    let Some(body) = armored.strip_prefix(BEGIN) else {
        return Err(
            "missing header (the file must begin with -----BEGIN SSH SIGNATURE----- \
                    and a newline)"
                .into(),
        );
    };
    let end = body
        .windows(END.len())
        .position(|w| w == END)
        .ok_or_else(|| {
            "missing footer (-----END SSH SIGNATURE----- on its own line)".to_string()
        })?;
    let mut b64 = &body[..end];
    // sshbuf_dup_string: a NUL is allowed only as the last byte.
    if let Some(nul) = b64.iter().position(|&c| c == 0) {
        if nul != b64.len() - 1 {
            return Err("a NUL byte inside the base64".into());
        }
        b64 = &b64[..nul];
    }
    super::allowed_signers::b64_pton(b64).ok_or_else(|| "the body is not base64".to_string())
}

/// The sshsig blob inside the armor, as sshsig.c `sshsig_wrap_verify`
/// parses it: nothing may follow the signature ("trailing data").
pub fn parse_armored(armored: &[u8]) -> Result<SshSig, String> {
    use russh::keys::ssh_encoding::{Decode, Reader};
    let blob = dearmor(armored)?;
    let mut reader = &blob[..];
    let sig = SshSig::decode(&mut reader).map_err(|e| e.to_string())?;
    reader
        .finish(sig)
        .map_err(|_| "trailing data after the signature".to_string())
}

/// Check the signature of the bag at `dir`: it must be an sshsig over the
/// tagmanifest's bytes in [`NAMESPACE`], and with `allowed` by a key listed
/// there for `principal` (as `ssh-keygen -Y verify -I PRINCIPAL`; without
/// one, for some principal the line names) in that namespace at `now` (Unix
/// seconds; `ssh-keygen -Overify-time`).  Without `allowed`, a missing
/// signature is [`SignatureCheck::Unsigned`] and a present one is still
/// checked against the tagmanifest with its own key.  The bag itself is
/// checked by [`super::verify::verify`]; both are needed.
pub fn check_signature(
    dir: &Path,
    allowed: Option<&AllowedSigners>,
    principal: Option<&str>,
    now: i64,
) -> Result<SignatureCheck, SignatureProblem> {
    let sig_path = dir.join(SIGNATURE_FILE);
    if let Some(why) = manifest::unsafe_entry(dir, SIGNATURE_FILE) {
        return Err(SignatureProblem::Unreadable(format!("{why}; refused")));
    }
    if std::fs::symlink_metadata(&sig_path).is_err() {
        return match allowed {
            Some(_) => Err(SignatureProblem::Missing),
            None => Ok(SignatureCheck::Unsigned),
        };
    }
    let armored = crate::files::read_regular(&sig_path, MAX_SIGNATURE_BYTES)
        .map_err(SignatureProblem::Unreadable)?;
    let sig = parse_armored(&armored).map_err(SignatureProblem::Malformed)?;
    if sig.public_key().is_certificate() {
        return Err(SignatureProblem::Certificate);
    }
    if sig.namespace() != NAMESPACE {
        return Err(SignatureProblem::Namespace {
            found: sig.namespace().to_owned(),
        });
    }
    if sig.algorithm() == (Algorithm::Rsa { hash: None }) {
        return Err(SignatureProblem::WeakRsa);
    }
    let key = describe_key(sig.public_key());
    let tagmanifest = read_tagmanifest(dir).map_err(SignatureProblem::Unreadable)?;
    let own = PublicKey::from(sig.public_key().clone());
    if own.verify(NAMESPACE, &tagmanifest, &sig).is_err() {
        return Err(SignatureProblem::BadSignature { key });
    }
    check_coverage(&tagmanifest).map_err(SignatureProblem::DoesNotCover)?;
    let Some(allowed) = allowed else {
        return Ok(SignatureCheck::Unchecked { key });
    };
    let mut principals = Vec::new();
    let mut lines = Vec::new();
    let mut reasons = Vec::new();
    // Any line that allows it will do (9.2p1's sshsig_check_allowed_keys
    // stops at the first; a line that fails is skipped, never fatal).
    for s in allowed.lines_for(sig.public_key()) {
        match s.allows(principal, NAMESPACE, now) {
            Ok(()) => {
                let who = principal.map_or_else(|| s.principals.clone(), str::to_owned);
                if !principals.contains(&who) {
                    principals.push(who);
                }
                lines.push(s.line);
            }
            Err(why) => reasons.push((s.line, s.principals.clone(), why)),
        }
    }
    if !principals.is_empty() {
        return Ok(SignatureCheck::Trusted {
            key,
            principals,
            lines,
        });
    }
    if reasons.is_empty() {
        return Err(SignatureProblem::UnknownKey {
            key,
            file: allowed.path.clone(),
            cert_authority_lines: allowed.cert_authority_lines.len(),
            skipped_lines: allowed.skipped.len(),
        });
    }
    Err(SignatureProblem::NotAllowed {
        key,
        file: allowed.path.clone(),
        reasons,
    })
}

/// Seconds since the Unix epoch, now.
pub fn unix_now() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

#[cfg(test)]
mod tests {
    use super::*;
    use russh::keys::ssh_key::Signature;

    /// A throwaway key of `kind` made by ssh-keygen.
    fn keygen(dir: &Path, kind: &str) -> PrivateKey {
        let path = dir.join(format!("id_{kind}"));
        let mut cmd = std::process::Command::new("ssh-keygen");
        cmd.args(["-q", "-N", "", "-t", kind, "-f"]).arg(&path);
        if kind == "rsa" {
            cmd.args(["-b", "2048"]);
        }
        assert!(cmd.status().expect("ssh-keygen").success());
        PrivateKey::from_openssh(std::fs::read_to_string(&path).expect("read key"))
            .expect("parse key")
    }

    fn write_sig(dir: &Path, sig: &SshSig) {
        std::fs::write(
            dir.join(SIGNATURE_FILE),
            sig.to_pem(LineEnding::LF).expect("pem"),
        )
        .expect("write sig");
    }

    #[test]
    fn sha1_rsa_signatures_and_uncovered_tagmanifests_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let rsa = keygen(dir.path(), "rsa");
        let good = rsa
            .sign(NAMESPACE, HashAlg::Sha512, b"tagmanifest")
            .expect("sign");
        let sha1 = SshSig::new(
            rsa.public_key().key_data().clone(),
            NAMESPACE,
            HashAlg::Sha512,
            Signature::new(
                Algorithm::Rsa { hash: None },
                good.signature_bytes().to_vec(),
            )
            .expect("signature"),
        )
        .expect("sshsig");
        write_sig(dir.path(), &sha1);
        assert_eq!(
            check_signature(dir.path(), None, None, 0),
            Err(SignatureProblem::WeakRsa)
        );

        // A good signature of a tagmanifest that does not list the payload
        // manifest vouches for nothing below it.
        let tm = format!(
            "{}  bag-info.txt\n{}  bagit.txt\n",
            "a".repeat(64),
            "b".repeat(64)
        );
        std::fs::write(dir.path().join(TAGMANIFEST_FILE), &tm).expect("write");
        let ed = keygen(dir.path(), "ed25519");
        write_sig(
            dir.path(),
            &ed.sign(NAMESPACE, HashAlg::Sha512, tm.as_bytes())
                .expect("sign"),
        );
        match check_signature(dir.path(), None, None, 0) {
            Err(SignatureProblem::DoesNotCover(why)) => {
                assert!(why.contains("does not list manifest-sha256.txt"), "{why}")
            }
            other => panic!("{other:?}"),
        }
        // sha256 as the hash of the message is accepted, as ssh-keygen does.
        let tm_ok = format!("{tm}{}  manifest-sha256.txt\n", "c".repeat(64));
        std::fs::write(dir.path().join(TAGMANIFEST_FILE), &tm_ok).expect("write");
        write_sig(
            dir.path(),
            &ed.sign(NAMESPACE, HashAlg::Sha256, tm_ok.as_bytes())
                .expect("sign"),
        );
        assert!(matches!(
            check_signature(dir.path(), None, None, 0),
            Ok(SignatureCheck::Unchecked { .. })
        ));
    }
}
