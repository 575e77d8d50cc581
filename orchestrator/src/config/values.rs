//! Validated values: every string that can reach a remote host (a device, a
//! mount option, a ZFS property, a PostgreSQL setting, a path, a user name)
//! is one of these types.  The field is private and the only constructor
//! validates, so a value with `;`, `$(`, a backtick, a quote, a newline, a NUL
//! or a flag-looking leading `-` cannot exist past plan time.  The remote
//! layer quotes every argument as well: this is the first of two walls.
use std::fmt;

use serde::{Deserialize, Serialize};

/// Why a value was refused, as a fragment: "mount option `a;b` contains `;` …".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError(pub String);

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ValueError {}

/// The shape one kind of value must have.
struct Rule {
    /// What the value is, for messages: "mount option".
    what: &'static str,
    /// Punctuation allowed besides ASCII letters and digits.
    punct: &'static str,
    /// May it start with `-`?  Only where a flag is what it is (mkfs options).
    leading_dash: LeadingDash,
    /// Must it start with this prefix?
    prefix: Option<&'static str>,
    max_len: usize,
    /// What would be valid, for messages.
    valid: &'static str,
}

#[derive(PartialEq)]
enum LeadingDash {
    Never,
    Always,
    /// Only a negative number (`-1`), as PostgreSQL settings take.
    NumberOnly,
}

fn describe(c: char) -> String {
    match c {
        '\n' => "a newline".into(),
        '\r' => "a carriage return".into(),
        '\0' => "a NUL byte".into(),
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        '`' => "a backtick".into(),
        '\'' => "a single quote".into(),
        '"' => "a double quote".into(),
        c if c.is_control() => format!("the control character U+{:04X}", c as u32),
        c => format!("`{c}`"),
    }
}

pub(crate) fn shown(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars().take(60) {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    if s.chars().count() > 60 {
        out.push('…');
    }
    out
}

fn check(rule: &Rule, s: &str) -> Result<(), ValueError> {
    let what = rule.what;
    let valid = rule.valid;
    if s.is_empty() {
        return Err(ValueError(format!("{what} is empty; valid: {valid}")));
    }
    if s.len() > rule.max_len {
        return Err(ValueError(format!(
            "{what} `{}` is longer than {} bytes; valid: {valid}",
            shown(s),
            rule.max_len
        )));
    }
    if s.contains("$(") {
        return Err(ValueError(format!(
            "{what} `{}` contains `$(`, which a shell would run as a command; valid: {valid}",
            shown(s)
        )));
    }
    if let Some(c) = s
        .chars()
        .find(|&c| !(c.is_ascii_alphanumeric() || rule.punct.contains(c)))
    {
        return Err(ValueError(format!(
            "{what} `{}` contains {}, which is not allowed here; valid: {valid}",
            shown(s),
            describe(c)
        )));
    }
    if let Some(p) = rule.prefix {
        if !s.starts_with(p) {
            return Err(ValueError(format!(
                "{what} `{}` does not start with `{p}`; valid: {valid}",
                shown(s)
            )));
        }
    }
    if let Some(rest) = s.strip_prefix('-') {
        let ok = match rule.leading_dash {
            LeadingDash::Always => true,
            LeadingDash::Never => false,
            LeadingDash::NumberOnly => rest.starts_with(|c: char| c.is_ascii_digit()),
        };
        if !ok {
            return Err(ValueError(format!(
                "{what} `{}` starts with `-` and would be read as a flag; valid: {valid}",
                shown(s)
            )));
        }
    }
    Ok(())
}

fn no_dotdot(what: &str, s: &str) -> Result<(), ValueError> {
    if s.split('/').any(|c| c == "..") {
        return Err(ValueError(format!(
            "{what} `{}` contains a `..` component; give the path without it",
            shown(s)
        )));
    }
    Ok(())
}

macro_rules! value_type {
    ($(#[$doc:meta])* $name:ident, $rule:expr $(, extra = $extra:expr)?) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validate `s`; the error says what is wrong and what would be valid.
            pub fn new(s: &str) -> Result<Self, ValueError> {
                const RULE: Rule = $rule;
                check(&RULE, s)?;
                $( ($extra)(RULE.what, s)?; )?
                Ok($name(s.to_owned()))
            }
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl TryFrom<String> for $name {
            type Error = ValueError;
            fn try_from(s: String) -> Result<Self, ValueError> {
                $name::new(&s)
            }
        }

        impl From<$name> for String {
            fn from(v: $name) -> String {
                v.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}

value_type!(
    /// A block device under /dev, e.g. `/dev/vdb`, `/dev/ada1`, `/dev/loop7`.
    DevicePath,
    Rule {
        what: "device path",
        punct: "._/-",
        leading_dash: LeadingDash::Never,
        prefix: Some("/dev/"),
        max_len: 128,
        valid: "a path under /dev/ of letters, digits and . _ - / (e.g. /dev/sdb)",
    },
    extra = no_dotdot
);

value_type!(
    /// An absolute path on a host (pg_bin, work_dir).
    AbsPath,
    Rule {
        what: "path",
        punct: "._/-+@",
        leading_dash: LeadingDash::Never,
        prefix: Some("/"),
        max_len: 256,
        valid: "an absolute path of letters, digits and . _ - + @ / (e.g. /usr/lib/postgresql/17/bin)",
    },
    extra = no_dotdot
);

value_type!(
    /// One mount option (`noatime`, `barrier=0`, `compress=zstd:3`); several
    /// are joined with commas by the remote script, so a comma is refused here.
    MountOption,
    Rule {
        what: "mount option",
        punct: "_.=:/+-@",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 128,
        valid: "one option of letters, digits and _ . = : / + - @ per list entry (e.g. \"noatime\", \"barrier=0\")",
    }
);

value_type!(
    /// One mkfs argument: a flag (`-E`, `-O`) or its value (`lazy_itable_init=0`, `^has_journal`).
    MkfsOption,
    Rule {
        what: "mkfs option",
        punct: "_.=:,/+^-@",
        leading_dash: LeadingDash::Always,
        prefix: None,
        max_len: 128,
        valid: "one argument of letters, digits and _ . = : , / + ^ - @ per list entry (e.g. \"-E\", \"lazy_itable_init=0\")",
    }
);

value_type!(
    /// A ZFS dataset or pool property name (`compression`, `recordsize`, `com.example:tag`).
    ZfsPropertyName,
    Rule {
        what: "zfs property name",
        punct: "_:.-",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 64,
        valid: "letters, digits and _ : . - starting with a letter (e.g. recordsize)",
    },
    extra = zfs_property_name
);

value_type!(
    /// A ZFS property value (`zstd`, `8k`, `off`, `gzip-9`).
    ZfsPropertyValue,
    Rule {
        what: "zfs property value",
        punct: "_.:/+-@",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 128,
        valid: "letters, digits and _ . : / + - @ (e.g. \"zstd\", \"8k\", \"off\")",
    },
    extra = not_a_path
);

value_type!(
    /// A PostgreSQL setting name (`shared_buffers`, `auto_explain.log_min_duration`).
    PgSettingName,
    Rule {
        what: "postgresql setting name",
        punct: "_.",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 64,
        valid: "letters, digits, _ and . starting with a letter (e.g. shared_buffers)",
    },
    extra = starts_with_letter
);

value_type!(
    /// A PostgreSQL setting value as written to postgresql.conf (`1500MB`, `off`, `0.9`, `-1`).
    PgSettingValue,
    Rule {
        what: "postgresql setting value",
        punct: "_.:/+%@, -",
        leading_dash: LeadingDash::NumberOnly,
        prefix: None,
        max_len: 256,
        valid: "letters, digits, spaces and _ . : / + % @ , - (e.g. \"1500MB\", \"off\", \"0.9\"); quotes are added by fsmatrix",
    }
);

value_type!(
    /// A login or database OS user (`root`, `postgres`, `bench-ops`).
    UserName,
    Rule {
        what: "user name",
        punct: "_.-",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 32,
        valid: "letters, digits and _ . - not starting with - (e.g. postgres)",
    }
);

value_type!(
    /// A host's name in the inventory (also a folder name in bundles).
    HostName,
    Rule {
        what: "host name",
        punct: "._-",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 63,
        valid: "letters, digits and . _ - not starting with - (e.g. deb12, fbsd14-zfs)",
    },
    extra = no_leading_dot
);

value_type!(
    /// Where to reach a host: a DNS name, an IPv4 or an IPv6 address.
    Address,
    Rule {
        what: "address",
        punct: ".:-",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 253,
        valid: "a DNS name or an IPv4/IPv6 address (e.g. 10.0.1.159, db1.lab.example, fd00::5)",
    }
);

value_type!(
    /// A name fsmatrix shows and uses in folder names: a matrix, a filesystem
    /// variant, a workload, a tag.
    Label,
    Rule {
        what: "name",
        punct: "._+-",
        leading_dash: LeadingDash::Never,
        prefix: None,
        max_len: 64,
        valid: "letters, digits and . _ + - not starting with - or . (e.g. zfs-lz4)",
    },
    extra = no_leading_dot
);

fn starts_with_letter(what: &str, s: &str) -> Result<(), ValueError> {
    if s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        Ok(())
    } else {
        Err(ValueError(format!(
            "{what} `{}` does not start with a letter",
            shown(s)
        )))
    }
}

/// ZFS properties a matrix may not set (zfsprops(7), zpoolprops(7)): those
/// whose value is a path or a place outside the benchmark (`mountpoint`,
/// `altroot`, `cachefile`, `keylocation`, `bootfs`), those that hand the
/// dataset to someone else (`sharenfs`, `sharesmb`, `zoned`, `jailed`), and
/// those fsmatrix sets itself to mount and destroy what it made
/// (`canmount`, `readonly`), and the pool's `compatibility`, whose value
/// names feature files on the host.  Performance properties (compression,
/// recordsize, atime, sync, logbias, primarycache, ashift, …) stay allowed.
pub const ZFS_REFUSED_PROPERTIES: [&str; 12] = [
    "mountpoint",
    "altroot",
    "cachefile",
    "keylocation",
    "bootfs",
    "sharenfs",
    "sharesmb",
    "zoned",
    "jailed",
    "canmount",
    "readonly",
    "compatibility",
];

/// No performance property takes a path: a value that starts with `/` or
/// `~` would name a place on the host.
fn not_a_path(what: &str, s: &str) -> Result<(), ValueError> {
    if s.starts_with(['/', '~']) {
        return Err(ValueError(format!(
            "{what} `{}` is a path; properties that name places on the host are refused, \
             give a performance value (e.g. \"zstd\", \"8k\", \"off\")",
            shown(s)
        )));
    }
    Ok(())
}

fn zfs_property_name(what: &str, s: &str) -> Result<(), ValueError> {
    starts_with_letter(what, s)?;
    // ZFS property names are case-insensitive (`MountPoint` is `mountpoint`).
    let lower = s.to_ascii_lowercase();
    if ZFS_REFUSED_PROPERTIES.contains(&lower.as_str()) {
        return Err(ValueError(format!(
            "{what} `{}` is refused: it names a path or a place outside the benchmark, or fsmatrix \
             sets it itself (refused: {}); set performance properties such as compression, \
             recordsize, atime, sync, logbias, primarycache or ashift",
            shown(s),
            ZFS_REFUSED_PROPERTIES.join(", ")
        )));
    }
    Ok(())
}

fn no_leading_dot(what: &str, s: &str) -> Result<(), ValueError> {
    if s.starts_with('.') {
        Err(ValueError(format!(
            "{what} `{}` starts with `.`; start it with a letter or a digit",
            shown(s)
        )))
    } else {
        Ok(())
    }
}

/// A vary value before it is put into a template: the union of what any
/// template accepts, so a hostile value is caught at its own position.
pub(crate) fn check_vary_value(s: &str) -> Result<(), ValueError> {
    const RULE: Rule = Rule {
        what: "vary value",
        punct: "_.=:/+-@",
        leading_dash: LeadingDash::NumberOnly,
        prefix: None,
        max_len: 64,
        valid: "letters, digits and _ . = : / + - @ (e.g. \"lz4\", \"8k\")",
    };
    check(&RULE, s)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOSTILE: &[&str] = &[
        "a;b",
        "$(id)",
        "`id`",
        "a'b",
        "a\"b",
        "a\nb",
        "a\0b",
        "a!b",
        "a&b",
        "a|b",
        "a<b",
        "a>b",
        "'; rm -rf / #",
    ];

    #[test]
    fn zfs_properties_that_name_paths_or_belong_to_fsmatrix_are_refused() {
        for bad in [
            "mountpoint",
            "MountPoint",
            "cachefile",
            "altroot",
            "sharenfs",
            "canmount",
            "compatibility",
        ] {
            let e = ZfsPropertyName::new(bad).expect_err(bad).0;
            assert!(e.contains("refused") && e.contains("compression"), "{e}");
        }
        for ok in [
            "compression",
            "recordsize",
            "atime",
            "sync",
            "logbias",
            "primarycache",
            "ashift",
            "com.example:tag",
        ] {
            assert!(ZfsPropertyName::new(ok).is_ok(), "{ok}");
        }
    }

    #[test]
    fn every_type_refuses_shell_metacharacters() {
        for h in HOSTILE {
            for prefixed in [h.to_string(), format!("/dev/{h}"), format!("/{h}")] {
                assert!(DevicePath::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(AbsPath::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(MountOption::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(MkfsOption::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(ZfsPropertyName::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(ZfsPropertyValue::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(PgSettingName::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(PgSettingValue::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(UserName::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(HostName::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(Address::new(&prefixed).is_err(), "{prefixed:?}");
                assert!(Label::new(&prefixed).is_err(), "{prefixed:?}");
            }
        }
    }

    #[test]
    fn table_of_values() {
        type Case = (&'static str, fn(&str) -> bool, &'static str, bool);
        let cases: &[Case] = &[
            ("device", |s| DevicePath::new(s).is_ok(), "/dev/vdb", true),
            (
                "device",
                |s| DevicePath::new(s).is_ok(),
                "/dev/mapper/vg-lv_1",
                true,
            ),
            (
                "device",
                |s| DevicePath::new(s).is_ok(),
                "/dev/../etc/passwd",
                false,
            ),
            ("device", |s| DevicePath::new(s).is_ok(), "/tmp/disk", false),
            ("device", |s| DevicePath::new(s).is_ok(), "/dev/sd b", false),
            ("mount", |s| MountOption::new(s).is_ok(), "noatime", true),
            (
                "mount",
                |s| MountOption::new(s).is_ok(),
                "compress=zstd:3",
                true,
            ),
            (
                "mount",
                |s| MountOption::new(s).is_ok(),
                "noatime,barrier=0",
                false,
            ),
            ("mount", |s| MountOption::new(s).is_ok(), "-oremount", false),
            ("mkfs", |s| MkfsOption::new(s).is_ok(), "-E", true),
            ("mkfs", |s| MkfsOption::new(s).is_ok(), "^has_journal", true),
            ("mkfs", |s| MkfsOption::new(s).is_ok(), "-O x y", false),
            (
                "zfsname",
                |s| ZfsPropertyName::new(s).is_ok(),
                "com.example:x",
                true,
            ),
            (
                "zfsname",
                |s| ZfsPropertyName::new(s).is_ok(),
                "1abc",
                false,
            ),
            (
                "zfsval",
                |s| ZfsPropertyValue::new(s).is_ok(),
                "gzip-9",
                true,
            ),
            ("zfsval", |s| ZfsPropertyValue::new(s).is_ok(), "-o", false),
            (
                "zfsval",
                |s| ZfsPropertyValue::new(s).is_ok(),
                "/etc/zfs/compat",
                false,
            ),
            ("pgval", |s| PgSettingValue::new(s).is_ok(), "-1", true),
            (
                "pgval",
                |s| PgSettingValue::new(s).is_ok(),
                "%m [%p] ",
                false,
            ),
            ("pgval", |s| PgSettingValue::new(s).is_ok(), "-c", false),
            (
                "pgval",
                |s| PgSettingValue::new(s).is_ok(),
                "$user, public",
                false,
            ),
            ("pgval", |s| PgSettingValue::new(s).is_ok(), "1500MB", true),
            (
                "user",
                |s| UserName::new(s).is_ok(),
                "-oProxyCommand",
                false,
            ),
            ("user", |s| UserName::new(s).is_ok(), "postgres", true),
            ("addr", |s| Address::new(s).is_ok(), "fd00::5", true),
            (
                "addr",
                |s| Address::new(s).is_ok(),
                "-oProxyCommand=x",
                false,
            ),
            ("label", |s| Label::new(s).is_ok(), ".hidden", false),
            ("label", |s| Label::new(s).is_ok(), "zfs-lz4", true),
            ("path", |s| AbsPath::new(s).is_ok(), "usr/bin", false),
            ("path", |s| AbsPath::new(s).is_ok(), "/usr/local/bin", true),
        ];
        for (what, f, input, ok) in cases {
            assert_eq!(f(input), *ok, "{what}: {input:?}");
        }
    }

    #[test]
    fn messages_say_what_is_wrong_and_what_is_valid() {
        let e = MountOption::new("noatime;reboot").unwrap_err().0;
        assert!(
            e.starts_with("mount option `noatime;reboot` contains `;`"),
            "{e}"
        );
        assert!(e.contains("valid: one option"), "{e}");
        let e = DevicePath::new("/dev/sdb\n").unwrap_err().0;
        assert!(e.contains("a newline"), "{e}");
        let e = UserName::new("-x").unwrap_err().0;
        assert!(e.contains("would be read as a flag"), "{e}");
        let e = PgSettingValue::new("$(id)").unwrap_err().0;
        assert!(e.contains("`$(`"), "{e}");
    }

    #[test]
    fn deserialize_validates() {
        let ok: Result<DevicePath, _> = serde_json::from_str("\"/dev/vdb\"");
        assert!(ok.is_ok());
        let bad: Result<DevicePath, _> = serde_json::from_str("\"/dev/vdb;x\"");
        assert!(bad.is_err());
    }
}
