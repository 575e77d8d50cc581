//! Guests: a `[[host]]` with `guest_of` and a `[host.vm]` table is a virtual
//! machine fsmatrix boots on its physical host (plain `qemu-system-x86_64`,
//! the verbs `vm-start`, `vm-stop`, `vm-reap` of remote-scripts/common.sh),
//! hands one of that host's listed devices, reaches through that host and
//! stops again.  Every value here is checked once, at load, and again by the
//! script (docs/formats.md "Guests").
use super::*;

/// One closed set of words: the value's validator and its "valid:" list.
macro_rules! word_enum {
    ($(#[$m:meta])* $name:ident, $what:literal, { $($(#[$vm:meta])* $v:ident => $s:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum $name { $($(#[$vm])* #[serde(rename = $s)] $v),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$v),+];
            pub fn as_str(self) -> &'static str {
                match self { $($name::$v => $s),+ }
            }
            pub fn parse(s: &str) -> Result<$name, ValueError> {
                $name::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    ValueError(format!(
                        "{} `{}` is not a value fsmatrix gives QEMU; valid: {}",
                        $what,
                        shown(s),
                        $name::ALL.iter().map(|v| v.as_str()).collect::<Vec<_>>().join(", ")
                    ))
                })
            }
        }
        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

word_enum!(
    /// How the guest's data disk is attached (and so what the guest calls it).
    DiskBus, "disk_bus", {
        /// `/dev/vdb` in the guest (the boot disk is `vda`).
        VirtioBlk => "virtio-blk",
        /// `/dev/sda` in the guest.
        VirtioScsi => "virtio-scsi",
        /// `/dev/nvme0n1` in the guest.
        Nvme => "nvme",
        /// `/dev/sda` in the guest (q35's AHCI controller).
        Sata => "sata",
    }
);

word_enum!(
    /// QEMU's `cache=` of the data disk (qemu-block-drivers: "cache mode").
    CacheMode, "cache", {
        None => "none",
        Writeback => "writeback",
        Writethrough => "writethrough",
        Directsync => "directsync",
        Unsafe => "unsafe",
    }
);

word_enum!(
    /// QEMU's `aio=` of the data disk.
    Aio, "aio", {
        Native => "native",
        Threads => "threads",
        IoUring => "io_uring",
    }
);

word_enum!(
    /// QEMU's accelerator: `kvm` on real hosts; `tcg` (software emulation)
    /// only where KVM cannot run (the lab): its numbers are a stand-in's.
    Accel, "accel", {
        Kvm => "kvm",
        Tcg => "tcg",
    }
);

word_enum!(
    /// The boot image's format (`qemu-img create -F`).
    ImageFormat, "image_format", {
        Raw => "raw",
        Qcow2 => "qcow2",
    }
);

impl CacheMode {
    /// Whether the host page cache is bypassed (O_DIRECT): QEMU's
    /// `aio=native` needs it.
    pub fn direct(self) -> bool {
        matches!(self, CacheMode::None | CacheMode::Directsync)
    }
}

impl DiskBus {
    /// What a Linux guest calls the data disk on this bus, the boot disk
    /// being the first virtio-blk disk.
    pub fn linux_guest_device(self) -> &'static str {
        match self {
            DiskBus::VirtioBlk => "/dev/vdb",
            DiskBus::VirtioScsi | DiskBus::Sata => "/dev/sda",
            DiskBus::Nvme => "/dev/nvme0n1",
        }
    }
}

/// A guest's machine, as `[host.vm]` gives it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vm {
    /// The boot image, a file on the physical host; never written: the
    /// guest boots a throwaway qcow2 overlay on it.
    pub image: AbsPath,
    pub image_format: ImageFormat,
    /// Direct kernel boot (the lab's image has no boot loader).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<AbsPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initrd: Option<AbsPath>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    pub memory_mib: u32,
    pub cpus: u32,
    pub disk_bus: DiskBus,
    pub cache: CacheMode,
    pub aio: Aio,
    pub accel: Accel,
    /// The physical host's listed device the guest gets as its data disk.
    pub disk: DevicePath,
    /// The guest's sshd, forwarded to `127.0.0.1:ssh_port` on the physical host.
    pub ssh_port: u16,
    /// Seconds to wait for the guest's SSH after it was started.
    pub boot_timeout: u64,
}

pub const VM_KEYS: &[&str] = &[
    "image",
    "image_format",
    "kernel",
    "initrd",
    "cmdline",
    "memory_mib",
    "cpus",
    "disk_bus",
    "cache",
    "aio",
    "accel",
    "disk",
    "ssh_port",
    "boot_timeout",
];

/// Where a guest's sshd is reached on its physical host: only loopback, so
/// nothing new is exposed on the network.
pub const GUEST_ADDRESS: &str = "127.0.0.1";

/// Limits of the numbers (a typo such as `memory_mib = 1024000000` is refused).
pub const MEMORY_MIB: (i64, i64) = (128, 1_048_576);
pub const CPUS: (i64, i64) = (1, 256);
pub const SSH_PORT: (i64, i64) = (1024, 65535);
pub const BOOT_TIMEOUT: (i64, i64) = (10, 3600);

const VM_PATH_VALID: &str = "an absolute path to a file of the physical host of letters, digits \
     and . _ - + @ / (no `,`, `..`, `.` or `//` parts), not under /dev, /proc, /sys or the \
     host's work_dir (e.g. /var/lib/fsmatrix/images/debian12.qcow2)";

/// `image`, `kernel`, `initrd`: a plain absolute path of a file ([`AbsPath`]
/// and no `,`, which QEMU's option syntax would split on), never a device or
/// a virtual filesystem.
pub fn vm_file_path(key: &str, s: &str) -> Result<AbsPath, ValueError> {
    let bad = |why: &str| {
        ValueError(format!(
            "{key} `{}` {why}; valid: {VM_PATH_VALID}",
            shown(s)
        ))
    };
    if s.contains("//") || s.split('/').any(|c| c == "." || c == "..") {
        return Err(bad("has a `//`, `.` or `..` part"));
    }
    let p = AbsPath::new(s).map_err(|e| bad(&format!("is not a plain path ({})", e.0)))?;
    if s.ends_with('/') {
        return Err(bad("names a folder"));
    }
    if let Some(t) = ["/dev", "/proc", "/sys"]
        .iter()
        .find(|t| s == **t || s.starts_with(&format!("{t}/")))
    {
        return Err(bad(&format!("is under {t}: a guest boots from a file")));
    }
    Ok(p)
}

/// A kernel command line for direct kernel boot: words of letters, digits
/// and `= _ . , : / + @ -` separated by single spaces.
pub fn vm_cmdline(s: &str) -> Result<String, ValueError> {
    let ok = !s.is_empty()
        && s.len() <= 512
        && !s.starts_with(' ')
        && !s.ends_with(' ')
        && !s.contains("  ")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || " =_.,:/+@-".contains(c));
    if ok {
        Ok(s.to_string())
    } else {
        Err(ValueError(format!(
            "cmdline `{}` is not a kernel command line fsmatrix passes; valid: words of letters, \
             digits and = _ . , : / + @ - separated by single spaces, at most 512 bytes (e.g. \
             \"root=LABEL=fsmx-guest ro console=ttyS0\")",
            shown(s)
        )))
    }
}

/// Read `[host.vm]` of a guest; `None` after pushing every error.
pub(super) fn parse_vm(errs: &mut Errors<'_>, v: &Tbl<'_, '_>) -> Option<Vm> {
    v.check_keys(errs, VM_KEYS);
    let mut ok = true;
    let mut need = |key: &str| {
        if v.get(key).is_none() {
            errs.push(
                v.span,
                format!(
                    "{} has no `{key}`; {}",
                    v.ctx,
                    match key {
                        "image" => format!("name its boot image; valid: {VM_PATH_VALID}"),
                        _ => "name the physical host's listed device the guest gets, e.g. disk = \"/dev/vdb\"".into(),
                    }
                ),
            );
            false
        } else {
            true
        }
    };
    let has_image = need("image");
    let has_disk = need("disk");
    ok &= has_image && has_disk;
    let path = |errs: &mut Errors<'_>, key: &str| -> Option<Option<AbsPath>> {
        let Some(s) = v.str(errs, key) else {
            return Some(None).filter(|_| v.get(key).is_none());
        };
        match vm_file_path(key, s.get_ref()) {
            Ok(p) => Some(Some(p)),
            Err(e) => {
                errs.push(&s.span(), format!("{} (in {})", e.0, v.ctx));
                None
            }
        }
    };
    let image = path(errs, "image");
    let kernel = path(errs, "kernel");
    let initrd = path(errs, "initrd");
    let word = |errs: &mut Errors<'_>, key: &str| -> Option<Option<String>> {
        match v.str(errs, key) {
            Some(s) => Some(Some(s.get_ref().clone())),
            None => Some(None).filter(|_| v.get(key).is_none()),
        }
    };
    let enum_of = |errs: &mut Errors<'_>,
                   key: &str,
                   parse: &dyn Fn(&str) -> Result<(), ValueError>|
     -> bool {
        match v.get(key).and_then(|_| v.str(errs, key)) {
            Some(s) => match parse(s.get_ref()) {
                Ok(()) => true,
                Err(e) => {
                    errs.push(&s.span(), format!("{} (in {})", e.0, v.ctx));
                    false
                }
            },
            None => v.get(key).is_none(),
        }
    };
    ok &= enum_of(errs, "image_format", &|s| ImageFormat::parse(s).map(|_| ()));
    ok &= enum_of(errs, "disk_bus", &|s| DiskBus::parse(s).map(|_| ()));
    ok &= enum_of(errs, "cache", &|s| CacheMode::parse(s).map(|_| ()));
    ok &= enum_of(errs, "aio", &|s| Aio::parse(s).map(|_| ()));
    ok &= enum_of(errs, "accel", &|s| Accel::parse(s).map(|_| ()));
    let get_word = |key: &str| {
        v.get(key)
            .and_then(|x| x.get_ref().as_str().map(str::to_string))
    };
    let image_format = get_word("image_format")
        .and_then(|s| ImageFormat::parse(&s).ok())
        .unwrap_or(ImageFormat::Raw);
    let disk_bus = get_word("disk_bus")
        .and_then(|s| DiskBus::parse(&s).ok())
        .unwrap_or(DiskBus::VirtioBlk);
    let cache = get_word("cache")
        .and_then(|s| CacheMode::parse(&s).ok())
        .unwrap_or(CacheMode::None);
    let accel = get_word("accel")
        .and_then(|s| Accel::parse(&s).ok())
        .unwrap_or(Accel::Kvm);
    let aio = match get_word("aio").and_then(|s| Aio::parse(&s).ok()) {
        Some(Aio::Native) if !cache.direct() => {
            if let Some(a) = v.get("aio") {
                errs.push(
                    &a.span(),
                    format!(
                        "aio `native` needs the host page cache bypassed, but cache is `{cache}` \
                         (QEMU refuses aio=native without cache.direct); valid: aio = \"threads\" \
                         or \"io_uring\", or cache = \"none\" or \"directsync\" (in {})",
                        v.ctx
                    ),
                );
            }
            ok = false;
            Aio::Native
        }
        Some(a) => a,
        None if cache.direct() => Aio::Native,
        None => Aio::Threads,
    };
    let cmdline = match word(errs, "cmdline") {
        Some(Some(s)) => match vm_cmdline(&s) {
            Ok(c) => Some(c),
            Err(e) => {
                if let Some(x) = v.get("cmdline") {
                    errs.push(&x.span(), format!("{} (in {})", e.0, v.ctx));
                }
                ok = false;
                None
            }
        },
        Some(None) => None,
        None => {
            ok = false;
            None
        }
    };
    for key in ["initrd", "cmdline"] {
        if let (Some(x), None) = (v.get(key), v.get("kernel")) {
            errs.push(
                &x.span(),
                format!(
                    "`{key}` in {} is given without `kernel`: it is for direct kernel boot only; \
                     valid: add kernel = \"/path/to/vmlinuz\", or remove `{key}` to boot the \
                     image's own boot loader",
                    v.ctx
                ),
            );
            ok = false;
        }
    }
    let num =
        |errs: &mut Errors<'_>, key: &str, (lo, hi): (i64, i64), default: i64| match v.get(key) {
            Some(_) => v.int(errs, key, lo, hi).map(|x| *x.get_ref()),
            None => Some(default),
        };
    let memory_mib = num(errs, "memory_mib", MEMORY_MIB, 1024);
    let cpus = num(errs, "cpus", CPUS, 1);
    let ssh_port = num(errs, "ssh_port", SSH_PORT, 10022);
    let boot_timeout = num(errs, "boot_timeout", BOOT_TIMEOUT, 300);
    let disk = if has_disk {
        v.typed(errs, "disk", DevicePath::new)
    } else {
        None
    };
    if !ok {
        return None;
    }
    Some(Vm {
        image: image??,
        image_format,
        kernel: kernel?,
        initrd: initrd?,
        cmdline,
        memory_mib: memory_mib? as u32,
        cpus: cpus? as u32,
        disk_bus,
        cache,
        aio,
        accel,
        disk: disk?,
        ssh_port: ssh_port? as u16,
        boot_timeout: boot_timeout? as u64,
    })
}

/// Once every host is read: each guest's physical host exists, is no guest
/// itself, runs an OS fsmatrix starts guests on with that accelerator, and
/// lists the device the guest gets; the guest's own `devices` name that one
/// disk; its forwarded port is its own on that host; its files are not in
/// that host's work_dir (which fsmatrix empties).  Then the guest's jump
/// chain is its physical host's chain and the physical host itself.
pub(super) fn resolve_guests(errs: &mut Errors<'_>, hosts: &mut [(Host, Tbl<'_, '_>)]) {
    /// What a guest's checks need of each host (copied: the hosts are
    /// changed in the loop).
    struct Phys {
        name: HostName,
        guest_of: Option<HostName>,
        os: Os,
        devices: Vec<DevicePath>,
        work: AbsPath,
        hop: JumpSpec,
        jump: Vec<JumpSpec>,
    }
    let physical: Vec<Phys> = hosts
        .iter()
        .map(|(h, _)| Phys {
            name: h.name.clone(),
            guest_of: h.guest_of.clone(),
            os: h.os,
            devices: h.devices.clone(),
            work: h.work_dir.clone(),
            hop: JumpSpec {
                user: Some(h.user.clone()),
                address: h.address.clone(),
                port: h.port,
                config: None,
            },
            jump: h.proxy_jump.clone(),
        })
        .collect();
    let mut ports: Vec<(HostName, u16, HostName)> = Vec::new();
    for (host, t) in hosts.iter_mut() {
        let (Some(of), Some(vm)) = (host.guest_of.clone(), host.vm.clone()) else {
            continue;
        };
        let vt = t.get("vm").and_then(|v| match v.get_ref() {
            DeValue::Table(vt) => Some((vt, v.span())),
            _ => None,
        });
        let span_of = |key: &str| -> std::ops::Range<usize> {
            vt.as_ref()
                .and_then(|(vt, _)| vt.iter().find(|(k, _)| k.get_ref().as_ref() == key))
                .map(|(_, v)| v.span())
                .or_else(|| vt.as_ref().map(|(_, s)| s.clone()))
                .unwrap_or_else(|| t.span.clone())
        };
        let of_span = t.get("guest_of").map_or(t.span.clone(), |v| v.span());
        let Some(p) = physical.iter().find(|p| p.name == of) else {
            let names: Vec<&str> = physical
                .iter()
                .filter(|p| p.guest_of.is_none())
                .map(|p| p.name.as_str())
                .collect();
            errs.push(
                &of_span,
                format!(
                    "`guest_of` of {} names `{of}`, which is no [[host]] of this inventory; valid: \
                     the name of the physical host the guest runs on ({})",
                    t.ctx,
                    if names.is_empty() { "none here".to_string() } else { names.join(", ") }
                ),
            );
            continue;
        };
        let Phys {
            guest_of: p_guest_of,
            os: p_os,
            devices: p_devices,
            work: p_work,
            hop: p_hop,
            jump: p_jump,
            ..
        } = p;
        if p_guest_of.is_some() || of == host.name {
            errs.push(
                &of_span,
                format!(
                    "`guest_of` of {} names `{of}`, which is itself a guest; fsmatrix starts guests \
                     on physical hosts only (no nested guests); valid: a [[host]] without guest_of",
                    t.ctx
                ),
            );
            continue;
        }
        let accels = p_os.profile().vm_accels;
        if !accels.contains(&vm.accel) {
            errs.push(
                &span_of("accel"),
                format!(
                    "{} runs on `{of}` ({}), where fsmatrix cannot start a guest with accel `{}`; \
                     valid: {}",
                    t.ctx,
                    p_os.as_str(),
                    vm.accel,
                    if accels.is_empty() {
                        format!(
                            "a physical host whose OS fsmatrix starts guests on ({}); fsmatrix's \
                             guests are qemu-system-x86_64 processes",
                            Os::ALL
                                .iter()
                                .filter(|o| !o.profile().vm_accels.is_empty())
                                .map(|o| o.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    } else {
                        accels
                            .iter()
                            .map(|a| a.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
            );
            continue;
        }
        if !p_devices.contains(&vm.disk) {
            errs.push(
                &span_of("disk"),
                format!(
                    "`disk` `{}` of {} is not one of the devices of [[host]] `{of}`; a guest gets \
                     only a device its physical host lists (the only ones fsmatrix may destroy \
                     there); valid: {}",
                    vm.disk,
                    t.ctx,
                    p_devices
                        .iter()
                        .map(|d| d.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            continue;
        }
        if host.devices.len() != 1 {
            let span = t.get("devices").map_or(t.span.clone(), |v| v.span());
            errs.push(
                &span,
                format!(
                    "{} lists {} devices; a guest gets exactly one disk (vm.disk), so `devices` \
                     names that disk as the guest sees it; valid: one device, e.g. [\"{}\"] for \
                     disk_bus {} on Linux",
                    t.ctx,
                    host.devices.len(),
                    vm.disk_bus.linux_guest_device(),
                    vm.disk_bus
                ),
            );
            continue;
        }
        let under_work = |p: &AbsPath| {
            let w = p_work.as_str().trim_end_matches('/');
            p.as_str().starts_with(&format!("{w}/"))
        };
        let mut files_ok = true;
        for (key, p) in [
            ("image", Some(&vm.image)),
            ("kernel", vm.kernel.as_ref()),
            ("initrd", vm.initrd.as_ref()),
        ] {
            if let Some(p) = p.filter(|p| under_work(p)) {
                errs.push(
                    &span_of(key),
                    format!(
                        "{key} `{p}` of {} is inside the work_dir of `{of}` ({p_work}), which \
                         fsmatrix writes and empties; valid: {VM_PATH_VALID}",
                        t.ctx
                    ),
                );
                files_ok = false;
            }
        }
        if !files_ok {
            continue;
        }
        if let Some((_, _, first)) = ports
            .iter()
            .find(|(o, port, _)| *o == of && *port == vm.ssh_port)
        {
            errs.push(
                &span_of("ssh_port"),
                format!(
                    "`ssh_port` {} of {} is also the port of guest `{first}` on `{of}`; each guest \
                     of a host needs its own forwarded port; valid: another port from {} to {}",
                    vm.ssh_port, t.ctx, SSH_PORT.0, SSH_PORT.1
                ),
            );
            continue;
        }
        ports.push((of.clone(), vm.ssh_port, host.name.clone()));
        let mut chain = p_jump.clone();
        chain.push(p_hop.clone());
        host.proxy_jump = chain;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METAL: &str = r#"
[defaults]
os = "linux"
[[host]]
name = "metal1"
address = "10.0.0.1"
user = "ops"
become = "sudo"
proxy_jump = "root@gw.lab"
devices = ["/dev/sdb", "/dev/sdc"]
work_dir = "/srv/fsmatrix"
"#;

    fn with_guest(guest: &str) -> Result<Inventory, String> {
        Inventory::parse(Path::new("/etc/fsm/inv.toml"), format!("{METAL}{guest}"))
            .map_err(|e| e.to_string())
    }

    const GUEST: &str = r#"
[[host]]
name = "metal1-kvm"
guest_of = "metal1"
devices = ["/dev/vdb"]
[host.vm]
image = "/var/lib/images/debian12.qcow2"
disk = "/dev/sdc"
"#;

    /// A guest reads with its defaults, is reached at 127.0.0.1:ssh_port
    /// through its physical host's chain and then that host, and renders
    /// back to the same inventory.
    #[test]
    fn a_guest_is_reached_through_its_physical_host_and_renders_back() {
        let inv = with_guest(&GUEST.replace("disk = ", "image_format = \"qcow2\"\ndisk = "))
            .unwrap_or_else(|e| panic!("{e}"));
        let g = &inv.hosts[1];
        assert_eq!(g.guest_of.as_ref().map(|h| h.as_str()), Some("metal1"));
        assert_eq!((g.address.as_str(), g.port), ("127.0.0.1", 10022));
        assert_eq!(g.platform, Platform::Kvm);
        let hops: Vec<String> = g.proxy_jump.iter().map(|j| j.to_string()).collect();
        assert_eq!(hops, ["root@gw.lab:22", "ops@10.0.0.1:22"]);
        let vm = g.vm.as_ref().expect("vm");
        assert_eq!(
            (
                vm.image_format,
                vm.memory_mib,
                vm.cpus,
                vm.disk_bus,
                vm.cache,
                vm.aio,
                vm.accel,
                vm.disk.as_str(),
                vm.boot_timeout
            ),
            (
                ImageFormat::Qcow2,
                1024,
                1,
                DiskBus::VirtioBlk,
                CacheMode::None,
                Aio::Native,
                Accel::Kvm,
                "/dev/sdc",
                300
            )
        );
        let text = render(&inv);
        let again = Inventory::parse(Path::new("/etc/fsm/inv.toml"), text.clone())
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert_eq!(again.hosts, inv.hosts, "{text}");
        // cache=writeback: threads by default.
        let inv = with_guest(&GUEST.replace("disk = ", "cache = \"writeback\"\ndisk = "))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(inv.hosts[1].vm.as_ref().map(|v| v.aio), Some(Aio::Threads));
    }

    /// Every new key refuses hostile and absurd values at its own line and
    /// column, with what would be valid.
    #[test]
    fn hostile_guest_values_are_refused_with_where_and_what_is_valid() {
        let table: &[(&str, &str, &str)] = &[
            // (replace `disk = "/dev/sdc"` line with, error start, error contains)
            (
                "disk = \"/dev/sda\"",
                "inv.toml:19:8: error: `disk` `/dev/sda`",
                "valid: /dev/sdb, /dev/sdc",
            ),
            (
                "disk = \"/dev/sdc; reboot\"",
                "inv.toml:19:8: error: device path",
                "valid:",
            ),
            ("disk = \"/etc/shadow\"", "inv.toml:19:8: error:", "/dev/"),
            (
                "disk = \"/dev/sdc\"\nmemory_mib = 99999999999",
                "inv.toml:20:14: error: `memory_mib`",
                "1048576",
            ),
            (
                "disk = \"/dev/sdc\"\nmemory_mib = 64",
                "inv.toml:20:14: error: `memory_mib`",
                "128",
            ),
            (
                "disk = \"/dev/sdc\"\ncpus = 0",
                "inv.toml:20:8: error: `cpus`",
                "256",
            ),
            (
                "disk = \"/dev/sdc\"\ncpus = 100000",
                "inv.toml:20:8: error: `cpus`",
                "256",
            ),
            (
                "disk = \"/dev/sdc\"\nssh_port = 22",
                "inv.toml:20:12: error: `ssh_port`",
                "1024",
            ),
            (
                "disk = \"/dev/sdc\"\nboot_timeout = 1",
                "inv.toml:20:16: error: `boot_timeout`",
                "3600",
            ),
            (
                "disk = \"/dev/sdc\"\ndisk_bus = \"ide;rm\"",
                "inv.toml:20:12: error: disk_bus `ide;rm`",
                "valid: virtio-blk, virtio-scsi, nvme, sata",
            ),
            (
                "disk = \"/dev/sdc\"\ncache = \"none,file=/etc/passwd\"",
                "inv.toml:20:9: error: cache",
                "valid: none, writeback",
            ),
            (
                "disk = \"/dev/sdc\"\naccel = \"hvf\"",
                "inv.toml:20:9: error: accel `hvf`",
                "valid: kvm, tcg",
            ),
            (
                "disk = \"/dev/sdc\"\ncache = \"writeback\"\naio = \"native\"",
                "inv.toml:21:7: error: aio `native` needs",
                "cache = \"none\"",
            ),
            (
                "disk = \"/dev/sdc\"\ncmdline = \"init=/bin/sh\"",
                "inv.toml:20:11: error: `cmdline` in",
                "without `kernel`",
            ),
            (
                "disk = \"/dev/sdc\"\nkernel = \"/boot/vmlinuz\"\ncmdline = \"a;reboot\"",
                "inv.toml:21:11: error: cmdline `a;reboot`",
                "valid: words",
            ),
            (
                "disk = \"/dev/sdc\"\nssh_port = 10022\nfoo = 1",
                "inv.toml:21:1: error:",
                "image",
            ),
        ];
        for (disk_line, start, has) in table {
            let e =
                with_guest(&GUEST.replace("disk = \"/dev/sdc\"", disk_line)).expect_err(disk_line);
            let e = e.replace("/etc/fsm/", "");
            assert!(e.starts_with(start), "{disk_line}: {e}");
            assert!(e.contains(has), "{disk_line}: {e}");
        }
        let e =
            with_guest(&GUEST.replace("disk = ", "image_format = \"vmdk\"\ndisk = ")).unwrap_err();
        assert!(
            e.contains("inv.toml:19:16: error: image_format `vmdk`")
                && e.contains("valid: raw, qcow2"),
            "{e}"
        );
        let images: &[(&str, &str)] = &[
            ("/dev/sdb", "is under /dev"),
            ("/proc/self/root/etc/x.img", "is under /proc"),
            ("/sys/block/x", "is under /sys"),
            ("/var/lib/images/../../../etc/shadow", "`..`"),
            ("relative.img", "is not a plain path"),
            ("/var/lib/i.img,file.locking=off", "is not a plain path"),
            ("/var/lib/$(reboot).img", "is not a plain path"),
            ("/var/lib/images/", "names a folder"),
            ("/srv/fsmatrix/vm/x.img", "inside the work_dir of `metal1`"),
        ];
        for (img, has) in images {
            let e =
                with_guest(&GUEST.replace("/var/lib/images/debian12.qcow2", img)).expect_err(img);
            assert!(e.contains("inv.toml:18:9: error: "), "{img}: {e}");
            assert!(
                e.contains(has) && e.contains("valid: an absolute path"),
                "{img}: {e}"
            );
        }
        let hosts: &[(&str, &str)] = &[
            ("guest_of = \"metal9\"", "names `metal9`, which is no [[host]] of this inventory; valid: the name of the physical host the guest runs on (metal1)"),
            ("guest_of = \"metal1-kvm\"", "which is itself a guest"),
            ("guest_of = \"metal1\"\naddress = \"10.0.0.9\"", "`address` in [[host]] `metal1-kvm` is not for a guest"),
            ("guest_of = \"metal1\"\nport = 2222", "`port` in [[host]] `metal1-kvm` is not for a guest"),
            ("guest_of = \"metal1\"\nproxy_jump = \"evil\"", "`proxy_jump` in [[host]] `metal1-kvm` is not for a guest"),
        ];
        for (line, has) in hosts {
            let e = with_guest(&GUEST.replace("guest_of = \"metal1\"", line)).expect_err(line);
            assert!(e.contains(has), "{line}: {e}");
        }
        // Both keys or neither; not in [defaults]; one disk.
        let e = with_guest(&GUEST.replace("[host.vm]", "[host.notvm]")).unwrap_err();
        assert!(e.contains("has `guest_of` but no [host.vm] table"), "{e}");
        let e = with_guest(&GUEST.replace("guest_of = \"metal1\"\n", "")).unwrap_err();
        assert!(e.contains("has a [host.vm] table but no `guest_of`"), "{e}");
        let e = with_guest(&GUEST.replace("[\"/dev/vdb\"]", "[\"/dev/vdb\", \"/dev/vdc\"]"))
            .unwrap_err();
        assert!(
            e.contains("lists 2 devices; a guest gets exactly one disk"),
            "{e}"
        );
        let e = Inventory::parse(
            Path::new("/etc/fsm/inv.toml"),
            format!(
                "{}{GUEST}",
                METAL.replace("os = \"linux\"", "os = \"linux\"\nguest_of = \"metal1\"")
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("/etc/fsm/inv.toml:4:1: error: unknown key `guest_of` in [defaults]"),
            "{e}"
        );
        // A guest of a BSD host is refused: fsmatrix starts qemu on Linux only.
        let e = with_guest(&format!(
            "{GUEST}\n[[host]]\nname = \"bsd\"\nos = \"freebsd\"\naddress = \"10.0.0.2\"\ndevices = [\"/dev/ada1\"]\n[[host]]\nname = \"bsd-vm\"\nguest_of = \"bsd\"\ndevices = [\"/dev/vtbd1\"]\n[host.vm]\nimage = \"/images/x.img\"\ndisk = \"/dev/ada1\"\n"
        ))
        .unwrap_err();
        assert!(
            e.contains("runs on `bsd` (freebsd), where fsmatrix cannot start a guest with accel `kvm`; valid: a physical host whose OS fsmatrix starts guests on (linux)"),
            "{e}"
        );
        // Two guests of one host on one forwarded port.
        let two = format!(
            "{GUEST}{}",
            GUEST.replace("name = \"metal1-kvm\"", "name = \"metal1-kvm2\"")
        );
        let e = with_guest(&two).unwrap_err();
        assert!(
            e.contains(
                "`ssh_port` 10022 of [[host]] `metal1-kvm2` is also the port of guest `metal1-kvm`"
            ),
            "{e}"
        );
        assert!(with_guest(
            &two.replacen(
                "disk = \"/dev/sdc\"",
                "disk = \"/dev/sdc\"\nssh_port = 10023",
                2
            )
            .replacen("ssh_port = 10023", "ssh_port = 10022", 1)
        )
        .is_ok());
    }
}
