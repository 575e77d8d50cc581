//! Signed bundles (`fsmatrix sign`, `verify --allowed-signers`): the
//! signature is OpenSSH's own sshsig, so each side checks the other's —
//! fsmatrix's signatures with `ssh-keygen -Y verify`, `ssh-keygen -Y sign`'s
//! with fsmatrix — for Ed25519, ECDSA and RSA keys, a key file and a private
//! ssh-agent.  Tampering with the payload, the manifests or bag-info, and a
//! key not allowed, are refused with the reason.
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use fsmatrix::results::bundle::allowed_signers::AllowedSigners;
use fsmatrix::results::bundle::signature::{
    self, check_signature, sign_bundle, SignatureCheck, Signer, SIGNATURE_FILE,
};
use fsmatrix::results::{Bundle, SweepStatus};

use super::bundle_common::make_bundle;
use crate::support::sshd::{encrypt_key, key_fingerprint, keygen, run, SshAgent};

const TAGMANIFEST: &str = "tagmanifest-sha256.txt";

fn fsmatrix() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_fsmatrix"));
    // No ssh-agent of the test runner's leaks into a test that sets none.
    c.env_remove("SSH_AUTH_SOCK").stdin(Stdio::null());
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

struct Fixture {
    tmp: tempfile::TempDir,
    bag: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().expect("tempdir");
        let bag = make_bundle(tmp.path(), SweepStatus::Complete);
        Fixture { tmp, bag }
    }

    /// A key pair `name` of `kind` (ed25519, ecdsa, rsa) in the temp folder.
    fn key(&self, name: &str, kind: &str) -> PathBuf {
        let k = self.tmp.path().join(name);
        keygen(&k, kind);
        k
    }

    /// An allowed_signers file of `lines` (`principal [options]` and a key
    /// file whose .pub is appended).
    fn allowed(&self, name: &str, lines: &[(&str, &Path)]) -> PathBuf {
        let mut s = String::from("# who may sign fsmatrix bundles\n");
        for (who, key) in lines {
            let public = std::fs::read_to_string(suffixed(key, ".pub")).expect("read .pub");
            s.push_str(&format!("{who} {}\n", public.trim()));
        }
        let p = self.tmp.path().join(name);
        std::fs::write(&p, s).expect("write allowed_signers");
        p
    }

    fn sig(&self) -> PathBuf {
        self.bag.join(SIGNATURE_FILE)
    }

    fn sign_with(&self, key: &Path) -> Output {
        fsmatrix()
            .arg("sign")
            .arg(&self.bag)
            .arg("--key")
            .arg(key)
            .output()
            .expect("fsmatrix sign")
    }

    fn verify(&self, allowed: Option<&Path>) -> Output {
        let mut c = fsmatrix();
        c.arg("verify").arg(&self.bag);
        if let Some(a) = allowed {
            c.arg("--allowed-signers").arg(a);
        }
        c.output().expect("fsmatrix verify")
    }

    /// `ssh-keygen -Y verify` of the bundle's signature, as a colleague
    /// without fsmatrix runs it.
    fn keygen_verify(&self, allowed: &Path, principal: &str) -> Output {
        keygen_verify(&self.bag, allowed, principal)
    }
}

fn keygen_verify(bag: &Path, allowed: &Path, principal: &str) -> Output {
    Command::new("ssh-keygen")
        .args(["-Y", "verify", "-f"])
        .arg(allowed)
        .args(["-I", principal, "-n", "fsmatrix", "-s"])
        .arg(bag.join(SIGNATURE_FILE))
        .stdin(std::fs::File::open(bag.join(TAGMANIFEST)).expect("open tagmanifest"))
        .output()
        .expect("ssh-keygen -Y verify")
}

fn suffixed(p: &Path, s: &str) -> PathBuf {
    let mut o = p.as_os_str().to_owned();
    o.push(s);
    PathBuf::from(o)
}

/// `ssh-keygen -Y sign -n NAMESPACE` of the tagmanifest: writes the very
/// file fsmatrix reads (`tagmanifest-sha256.txt.sig`).
fn keygen_sign(bag: &Path, key: &Path, namespace: &str) {
    run(Command::new("ssh-keygen")
        .args(["-Y", "sign", "-n", namespace, "-f"])
        .arg(key)
        .arg(bag.join(TAGMANIFEST))
        .stdin(Stdio::null()));
}

/// sha256 hex of a file, as the manifests hold it.
fn sha256(p: &Path) -> String {
    let out = run(Command::new("sha256sum").arg(p));
    out.split_whitespace().next().expect("sum").to_string()
}

/// Rewrite `manifest`'s line for `rel` with the file's current sha256:
/// what someone covering their tracks does.
fn rehash(bag: &Path, manifest: &str, rel: &str) {
    let path = bag.join(manifest);
    let old = std::fs::read_to_string(&path).expect("read manifest");
    let sum = sha256(&bag.join(rel));
    let new: String = old
        .lines()
        .map(|l| {
            if l.ends_with(&format!("  {rel}")) {
                format!("{sum}  {rel}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    assert_ne!(old, new, "{rel} not in {manifest} or unchanged");
    std::fs::write(&path, new).expect("write manifest");
}

#[test]
fn fsmatrix_signatures_pass_ssh_keygen_and_fsmatrix_for_each_key_type() {
    for kind in ["ed25519", "ecdsa", "rsa"] {
        let f = Fixture::new();
        let key = f.key(&format!("id_{kind}"), kind);
        let o = f.sign_with(&key);
        assert!(o.status.success(), "{kind}: {}", show(&o));
        assert_eq!(text(&o.stdout).trim(), f.sig().display().to_string());
        let fp = key_fingerprint(&key);
        assert!(text(&o.stderr).contains(&fp), "{}", show(&o));
        let armored = std::fs::read_to_string(f.sig()).expect("read .sig");
        assert!(
            armored.starts_with("-----BEGIN SSH SIGNATURE-----\n"),
            "{armored}"
        );
        assert!(armored.trim_end().ends_with("-----END SSH SIGNATURE-----"));

        let allowed = f.allowed("allowed_signers", &[("alice@example.com", &key)]);
        let k = f.keygen_verify(&allowed, "alice@example.com");
        assert!(
            k.status.success(),
            "{kind}: ssh-keygen refused: {}",
            show(&k)
        );
        assert!(
            text(&k.stdout).contains("Good \"fsmatrix\" signature for alice@example.com"),
            "{}",
            show(&k)
        );

        let v = f.verify(Some(&allowed));
        assert!(v.status.success(), "{kind}: {}", show(&v));
        let out = text(&v.stdout);
        assert!(out.starts_with("OK "), "{out}");
        assert!(
            out.contains("signature: good, by alice@example.com ("),
            "{out}"
        );
        assert!(out.contains(&fp), "{out}");

        // The signature is the one file the manifests cannot list: the bag
        // still verifies and nothing calls it extra.
        let plain = f.verify(None);
        assert!(plain.status.success(), "{}", show(&plain));
        let out = text(&plain.stdout);
        assert!(!out.contains("extra"), "{out}");
        assert!(
            out.contains("signature: present, by ")
                && out.contains(&fp)
                && out.contains("NOT checked against allowed signers"),
            "{out}"
        );
    }
}

#[test]
fn ssh_keygen_signatures_pass_fsmatrix_for_each_key_type() {
    for kind in ["ed25519", "ecdsa", "rsa"] {
        let f = Fixture::new();
        let key = f.key(&format!("id_{kind}"), kind);
        keygen_sign(&f.bag, &key, "fsmatrix");
        assert!(f.sig().is_file());
        let allowed = f.allowed(
            "allowed_signers",
            &[("bob@example.com namespaces=\"git,fsmatrix\"", &key)],
        );
        let v = f.verify(Some(&allowed));
        assert!(v.status.success(), "{kind}: {}", show(&v));
        assert!(
            text(&v.stdout).contains("signature: good, by bob@example.com ("),
            "{}",
            show(&v)
        );
        // The library says the same, naming the line.
        let a = AllowedSigners::load(&allowed).expect("load");
        match check_signature(&f.bag, Some(&a), None, signature::unix_now()) {
            Ok(SignatureCheck::Trusted {
                principals, lines, ..
            }) => {
                assert_eq!(principals, vec!["bob@example.com".to_string()]);
                assert_eq!(lines, vec![2]);
            }
            other => panic!("{kind}: {other:?}"),
        }
    }
}

#[test]
fn tampering_and_unknown_keys_are_refused_with_the_reason() {
    let f = Fixture::new();
    let key = f.key("id_ed25519", "ed25519");
    assert!(f.sign_with(&key).status.success());
    let allowed = f.allowed("allowed_signers", &[("alice@example.com", &key)]);
    let pristine = f.tmp.path().join("pristine");
    run(Command::new("cp").arg("-a").arg(&f.bag).arg(&pristine));
    let reset = || {
        run(Command::new("rm").arg("-rf").arg(&f.bag));
        run(Command::new("cp").arg("-a").arg(&pristine).arg(&f.bag));
    };
    let refused = |what: &str, expect: &[&str]| {
        let v = f.verify(Some(&allowed));
        assert_eq!(v.status.code(), Some(1), "{what}: {}", show(&v));
        let out = text(&v.stdout);
        assert!(!out.starts_with("OK "), "{what}: {out}");
        for e in expect {
            assert!(out.contains(e), "{what}: {e:?} not in\n{}", show(&v));
        }
        assert!(text(&v.stderr).contains("does not verify"), "{}", show(&v));
    };
    let payload = "data/cells/c01/result.json";
    let flip = |rel: &str| {
        let p = f.bag.join(rel);
        let mut b = std::fs::read(&p).expect("read");
        let i = b.len() / 2;
        b[i] ^= 0x01;
        std::fs::write(&p, b).expect("write");
    };

    // A payload byte: the bag's own checksums name the file.
    flip(payload);
    refused("payload", &[&format!("changed: {payload}")]);
    reset();

    // The payload and the manifest, consistently: the tagmanifest names
    // the manifest.
    flip(payload);
    rehash(&f.bag, "manifest-sha256.txt", payload);
    refused("manifest", &["changed tag file: manifest-sha256.txt"]);
    reset();

    // Every checksum rewritten to match: only the signature catches it,
    // and ssh-keygen agrees.
    flip(payload);
    rehash(&f.bag, "manifest-sha256.txt", payload);
    rehash(&f.bag, TAGMANIFEST, "manifest-sha256.txt");
    refused(
        "payload + manifests",
        &[
            "checksums OK",
            "signature refused: tagmanifest-sha256.txt.sig does not match tagmanifest-sha256.txt",
        ],
    );
    assert!(!f
        .keygen_verify(&allowed, "alice@example.com")
        .status
        .success());
    reset();

    // bag-info.txt edited, tagmanifest rewritten to match.
    let info = f.bag.join("bag-info.txt");
    let edited = std::fs::read_to_string(&info)
        .expect("read")
        .replace("Sweep-Status: complete", "Sweep-Status: incomplete");
    std::fs::write(&info, edited).expect("write");
    let v = f.verify(None);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(text(&v.stdout).contains("changed tag file: bag-info.txt"));
    rehash(&f.bag, TAGMANIFEST, "bag-info.txt");
    refused("bag-info", &["does not match"]);
    // Without --allowed-signers too: a signature that does not match is refused.
    let v = f.verify(None);
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(
        text(&v.stdout).contains("signature refused"),
        "{}",
        show(&v)
    );
    reset();

    // The tagmanifest itself.
    let tm = f.bag.join(TAGMANIFEST);
    let mut t = std::fs::read_to_string(&tm).expect("read");
    t.push('\n');
    std::fs::write(&tm, t).expect("write");
    refused("tagmanifest", &["does not match"]);
    reset();

    // A key that the allowed signers do not list.
    let other = f.key("id_other", "ed25519");
    let others = f.allowed("others", &[("carol@example.com", &other)]);
    let v = f.verify(Some(&others));
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    let fp = key_fingerprint(&key);
    assert!(
        text(&v.stdout).contains(&format!("signed by ED25519 key {fp}, which")),
        "{}",
        show(&v)
    );
    assert!(text(&v.stdout).contains("does not list"), "{}", show(&v));
    assert!(!f
        .keygen_verify(&others, "carol@example.com")
        .status
        .success());

    // Listed, but for other namespaces, or no longer valid.
    for (opts, why) in [
        ("namespaces=\"git\"", "do not include it"),
        ("valid-before=\"20200101Z\"", "valid only before 2020-01-01"),
        ("valid-after=\"29990101\"", "valid only after"),
    ] {
        let a = f.allowed("limited", &[(&format!("alice@example.com {opts}"), &key)]);
        let v = f.verify(Some(&a));
        assert_eq!(v.status.code(), Some(1), "{opts}: {}", show(&v));
        assert!(text(&v.stdout).contains(why), "{opts}: {}", show(&v));
        assert!(text(&v.stdout).contains("limited lists but does not allow"));
        assert!(
            !f.keygen_verify(&a, "alice@example.com").status.success(),
            "{opts}"
        );
    }

    // A signature made for another namespace (`-n git`): refused.
    // (ssh-keygen does not overwrite a signature file without asking.)
    std::fs::remove_file(f.sig()).expect("rm");
    keygen_sign(&f.bag, &key, "git");
    refused("namespace", &["namespace \"git\", not \"fsmatrix\""]);
    reset();

    // Garbage in the signature file.
    std::fs::write(
        f.sig(),
        "-----BEGIN SSH SIGNATURE-----\nAAAA\n-----END SSH SIGNATURE-----\n",
    )
    .expect("write");
    refused("garbage", &["is not an SSH signature"]);
    reset();

    // No signature at all, when one is required.
    std::fs::remove_file(f.sig()).expect("rm");
    refused(
        "unsigned",
        &["not signed: there is no tagmanifest-sha256.txt.sig"],
    );
    let v = f.verify(None);
    assert!(v.status.success(), "{}", show(&v));
    assert!(!text(&v.stdout).contains("signature"), "{}", show(&v));
    reset();

    // A signature file that is a link is never followed.
    std::fs::remove_file(f.sig()).expect("rm");
    std::os::unix::fs::symlink(pristine.join(SIGNATURE_FILE), f.sig()).expect("symlink");
    let v = f.verify(Some(&allowed));
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(text(&v.stdout).contains("symbolic link"), "{}", show(&v));
}

#[test]
fn bad_allowed_signers_lines_are_skipped_as_ssh_keygen_skips_them() {
    let f = Fixture::new();
    let key = f.key("id_ed25519", "ed25519");
    assert!(f.sign_with(&key).status.success());
    let public = std::fs::read_to_string(suffixed(&key, ".pub")).expect("pub");
    for (line, why) in [
        (
            format!("alice@x bogus=\"1\" {}", public.trim()),
            "unknown key option",
        ),
        (
            format!("alice@x namespaces=fsmatrix {}", public.trim()),
            "missing start quote",
        ),
        ("alice@x ssh-ed25519 !!!!".to_string(), "invalid key"),
        ("alice@x".to_string(), "missing key"),
    ] {
        // Alone, the bad line vouches for nothing: refused (1), with the
        // line named, as ssh-keygen refuses it and logs the line.
        let p = f.tmp.path().join("bad_signers");
        std::fs::write(&p, format!("# ok\n{line}\n")).expect("write");
        let v = f.verify(Some(&p));
        assert_eq!(v.status.code(), Some(1), "{line}: {}", show(&v));
        let err = text(&v.stderr);
        assert!(
            err.contains(&format!("{}:2: skipped", p.display())),
            "{err}"
        );
        assert!(err.contains(why), "{line}: {err}");
        assert!(text(&v.stdout).contains("line(s) that ssh-keygen cannot read"));
        assert!(!f.keygen_verify(&p, "alice@x").status.success());
        // Before a good line, it is skipped and the good line counts.
        std::fs::write(&p, format!("{line}\nalice@x {}", public.trim_end())).expect("write");
        let v = f.verify(Some(&p));
        assert!(v.status.success(), "{line}: {}", show(&v));
        assert!(text(&v.stderr).contains(":1: skipped"), "{}", show(&v));
        assert!(f.keygen_verify(&p, "alice@x").status.success(), "{line}");
    }
    // A missing file, a folder.
    for p in [f.tmp.path().join("nope"), f.tmp.path().to_path_buf()] {
        let v = f.verify(Some(&p));
        assert_eq!(v.status.code(), Some(2), "{}", show(&v));
    }
    // cert-authority lines are skipped with a note; a plain key line still counts.
    let p = f.tmp.path().join("with_ca");
    std::fs::write(
        &p,
        format!(
            "*@example.com cert-authority {}alice@example.com {}",
            public, public
        ),
    )
    .expect("write");
    let v = f.verify(Some(&p));
    assert!(v.status.success(), "{}", show(&v));
    assert!(
        text(&v.stderr).contains(":1: cert-authority lines are not supported"),
        "{}",
        show(&v)
    );
    let only_ca = f.tmp.path().join("only_ca");
    std::fs::write(&only_ca, format!("*@example.com cert-authority {public}")).expect("write");
    let v = f.verify(Some(&only_ca));
    assert_eq!(v.status.code(), Some(1), "{}", show(&v));
    assert!(
        text(&v.stdout).contains("1 cert-authority line(s) are not supported"),
        "{}",
        show(&v)
    );
}

#[test]
fn re_signing_replaces_and_closing_again_removes_a_stale_signature() {
    let f = Fixture::new();
    let a = f.key("id_a", "ed25519");
    let b = f.key("id_b", "ecdsa");
    assert!(f.sign_with(&a).status.success());
    let o = f.sign_with(&b);
    assert!(o.status.success(), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("earlier signature is replaced"),
        "{}",
        show(&o)
    );
    let only_b = f.allowed("only_b", &[("bob@example.com", &b)]);
    assert!(f.keygen_verify(&only_b, "bob@example.com").status.success());
    let only_a = f.allowed("only_a", &[("alice@example.com", &a)]);
    assert_eq!(f.verify(Some(&only_a)).status.code(), Some(1));
    // Nothing else was left at the top of the bag (no temporary file).
    let mut top: Vec<String> = std::fs::read_dir(&f.bag)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    top.sort();
    assert_eq!(
        top,
        [
            "bag-info.txt",
            "bagit.txt",
            "data",
            "journal.jsonl",
            "manifest-sha256.txt",
            "tagmanifest-sha256.txt",
            "tagmanifest-sha256.txt.sig"
        ]
    );

    // resume reopens and closes the bundle: the tagmanifest is rewritten
    // and the old signature, now stale, goes.
    let mut reopened = Bundle::open(&f.bag).expect("open");
    reopened.close(SweepStatus::Complete).expect("close");
    assert!(!f.sig().exists());
    let v = f.verify(None);
    assert!(v.status.success(), "{}", show(&v));

    // A bundle that does not verify is not signed.
    let p = f.bag.join("data/results.csv");
    std::fs::write(&p, "changed\n").expect("write");
    let o = f.sign_with(&a);
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(text(&o.stderr).contains("does not verify"), "{}", show(&o));
    assert!(!f.sig().exists());
}

#[test]
fn archive_keeps_the_signature_and_verify_of_the_archive_checks_it() {
    let f = Fixture::new();
    let key = f.key("id_rsa", "rsa");
    assert!(f.sign_with(&key).status.success());
    let allowed = f.allowed("allowed_signers", &[("alice@example.com", &key)]);
    let o = fsmatrix()
        .arg("archive")
        .arg(&f.bag)
        .output()
        .expect("archive");
    assert!(o.status.success(), "{}", show(&o));
    let archive = PathBuf::from(text(&o.stdout).trim());
    let v = fsmatrix()
        .arg("verify")
        .arg(&archive)
        .arg("--allowed-signers")
        .arg(&allowed)
        .output()
        .expect("verify");
    assert!(v.status.success(), "{}", show(&v));
    assert!(text(&v.stdout).contains("signature: good, by alice@example.com"));

    // Extracted by hand: the signature is there and ssh-keygen accepts it.
    let out = tempfile::tempdir().expect("tempdir");
    let bag = fsmatrix::results::bundle::archive::unpack(&archive, out.path()).expect("unpack");
    assert!(bag.join(SIGNATURE_FILE).is_file());
    assert_eq!(
        std::fs::read(bag.join(SIGNATURE_FILE)).expect("read"),
        std::fs::read(f.sig()).expect("read")
    );
    let k = keygen_verify(&bag, &allowed, "alice@example.com");
    assert!(k.status.success(), "{}", show(&k));

    // Signing an archive is refused: sign the folder, then archive.
    let o = fsmatrix()
        .arg("sign")
        .arg(&archive)
        .arg("--key")
        .arg(&key)
        .output()
        .expect("sign");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(text(&o.stderr).contains("it is an archive"), "{}", show(&o));
}

#[test]
fn ssh_agent_signs_encrypted_keys_and_plain_agent_keys() {
    let f = Fixture::new();
    let agent = SshAgent::start();
    let ed = f.key("id_ed25519", "ed25519");
    let rsa = f.key("id_rsa", "rsa");
    agent.add(&ed);
    agent.add(&rsa);
    // Both keys now get a passphrase: only the agent can sign with them.
    encrypt_key(&ed, "correct horse", false);
    encrypt_key(&rsa, "battery staple", true);
    let allowed = f.allowed(
        "allowed_signers",
        &[("alice@example.com", &ed), ("robot@example.com", &rsa)],
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");

    // Without an agent, an encrypted key is refused with what to do; no prompt.
    let e = rt
        .block_on(Signer::from_key_file(&ed, None))
        .expect_err("encrypted key without agent");
    assert!(e.to_string().contains("load it with `ssh-add"), "{e}");
    let o = f.sign_with(&ed);
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("load it with `ssh-add"),
        "{}",
        show(&o)
    );
    assert!(
        text(&o.stderr).contains("SSH_AUTH_SOCK is unset"),
        "{}",
        show(&o)
    );

    // The encrypted key file, through the agent (library, socket explicit).
    for (key, who) in [(&ed, "alice@example.com"), (&rsa, "robot@example.com")] {
        let signer = rt
            .block_on(Signer::from_key_file(key, Some(&agent.sock)))
            .expect("agent signer");
        assert!(signer.describe().contains("held by ssh-agent"));
        let signed = rt.block_on(sign_bundle(&f.bag, &signer)).expect("sign");
        assert_eq!(signed.path, f.sig());
        let k = f.keygen_verify(&allowed, who);
        assert!(k.status.success(), "{who}: {}", show(&k));
        let a = AllowedSigners::load(&allowed).expect("load");
        match check_signature(&f.bag, Some(&a), None, signature::unix_now()) {
            Ok(SignatureCheck::Trusted { principals, .. }) => assert_eq!(principals, [who]),
            other => panic!("{who}: {other:?}"),
        }
    }

    // --agent: the only/first key, or the one a .pub names (CLI, the
    // agent's socket given to the child process only).
    let (first, note) = rt
        .block_on(Signer::from_agent(&agent.sock, None))
        .expect("first key");
    assert!(note.expect("two keys").contains("holds 2 keys"));
    assert_eq!(
        first
            .public_key()
            .fingerprint(Default::default())
            .to_string(),
        key_fingerprint(&ed)
    );
    let o = fsmatrix()
        .arg("sign")
        .arg(&f.bag)
        .arg("--agent")
        .arg("--key")
        .arg(suffixed(&rsa, ".pub"))
        .env("SSH_AUTH_SOCK", &agent.sock)
        .output()
        .expect("sign --agent");
    assert!(o.status.success(), "{}", show(&o));
    assert!(f
        .keygen_verify(&allowed, "robot@example.com")
        .status
        .success());
    assert!(!f
        .keygen_verify(&allowed, "alice@example.com")
        .status
        .success());
    let v = f.verify(Some(&allowed));
    assert!(
        text(&v.stdout).contains("signature: good, by robot@example.com"),
        "{}",
        show(&v)
    );

    // A key the agent does not hold.
    let stranger = f.key("id_stranger", "ed25519");
    let o = fsmatrix()
        .arg("sign")
        .arg(&f.bag)
        .arg("--agent")
        .arg("--key")
        .arg(&stranger)
        .env("SSH_AUTH_SOCK", &agent.sock)
        .output()
        .expect("sign --agent");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(text(&o.stderr).contains("does not hold"), "{}", show(&o));
    // --agent without an agent.
    let o = fsmatrix()
        .arg("sign")
        .arg(&f.bag)
        .arg("--agent")
        .output()
        .expect("sign --agent");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        text(&o.stderr).contains("SSH_AUTH_SOCK is unset"),
        "{}",
        show(&o)
    );
}

#[test]
fn run_sign_checks_the_key_before_touching_any_host() {
    let f = Fixture::new();
    let inv = f.tmp.path().join("inventory.toml");
    let key = f.key("id_login", "ed25519");
    // An unreachable host: should anything be started, it fails at once.
    std::fs::write(
        &inv,
        format!(
            "[defaults]\nuser = \"root\"\nidentity_file = \"{}\"\nknown_hosts = \"{}\"\n\
             work_dir = \"/var/tmp/fsmatrix\"\nos = \"linux\"\npg_bin = \"/usr/lib/postgresql/15/bin\"\n\
             pg_user = \"postgres\"\n\n[[host]]\nname = \"h1\"\naddress = \"127.0.0.1\"\nport = 1\n\
             devices = [\"/dev/loop0\"]\n",
            key.display(),
            f.tmp.path().join("known_hosts").display()
        ),
    )
    .expect("write inventory");
    let matrix = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../matrix/quick.toml"));
    let out = f.tmp.path().join("out");
    let missing = f.tmp.path().join("no-such-key");
    let o = fsmatrix()
        .arg("run")
        .arg("-i")
        .arg(&inv)
        .arg("-m")
        .arg(matrix)
        .arg("--out")
        .arg(&out)
        .arg("--sign")
        .arg(&missing)
        .output()
        .expect("run");
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
    assert!(
        text(&o.stderr).contains(&format!("failed to use the key {}", missing.display())),
        "{}",
        show(&o)
    );
    assert!(!out.exists(), "a bundle was started");
}
