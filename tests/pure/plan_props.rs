//! Property: for random valid matrices, cells = product of the axes minus
//! the excluded and the dropped ones; ids are unique, and stable when
//! unrelated entries are reordered or added.
use std::collections::BTreeMap;
use std::path::Path;

use fsmatrix::config::{FsType, Inventory, Matrix, Os};
use fsmatrix::plan::plan;
use proptest::prelude::*;

const INV: &str = r#"
[defaults]
identity_file = "/k"
[[host]]
name = "l1"
address = "10.203.0.11"
os = "linux"
devices = ["/dev/vdb"]
[[host]]
name = "f1"
address = "10.203.0.12"
os = "freebsd"
devices = ["/dev/ada1"]
[[host]]
name = "d1"
address = "10.203.0.13"
os = "dragonfly"
devices = ["/dev/da1"]
[[host]]
name = "l2"
address = "10.203.0.14"
os = "linux"
devices = ["/dev/vdb"]
"#;

#[derive(Clone, Debug)]
struct Fs {
    t: FsType,
    vary: usize,
}

#[derive(Clone, Debug)]
struct Wl {
    builtin: usize,
    clients: Vec<u32>,
    repeats: u32,
    /// Adaptive repeats: `min` = max(repeats, 2), `max` = min + extra.
    adaptive: Option<u32>,
    warmup: u32,
}

impl Wl {
    /// Cells per client count: warm-ups plus every planned repeat.
    fn runs(&self) -> usize {
        let max = match self.adaptive {
            Some(extra) => self.repeats.max(2) + extra,
            None => self.repeats,
        };
        (max + self.warmup) as usize
    }

    fn repeats_toml(&self) -> String {
        match self.adaptive {
            Some(extra) => {
                let min = self.repeats.max(2);
                format!(
                    "{{ min = {min}, max = {}, target_ci = \"2%\" }}",
                    min + extra
                )
            }
            None => self.repeats.to_string(),
        }
    }
}

#[derive(Clone, Debug)]
struct M {
    fs: Vec<Fs>,
    wl: Vec<Wl>,
    exclude: Option<(FsType, Option<u32>)>,
}

fn fs_type() -> impl Strategy<Value = FsType> {
    prop::sample::select(FsType::ALL.to_vec())
}

fn strategy() -> impl Strategy<Value = M> {
    let fs = prop::collection::vec(
        (fs_type(), 0usize..4).prop_map(|(t, vary)| Fs { t, vary }),
        1..5,
    );
    let wl = prop::collection::vec(
        (
            0usize..3,
            prop::sample::subsequence(vec![1u32, 2, 4, 8, 16], 1..=5),
            1u32..4,
            prop::option::of(0u32..3),
            0u32..3,
        )
            .prop_map(|(builtin, clients, repeats, adaptive, warmup)| Wl {
                builtin,
                clients,
                repeats,
                adaptive,
                warmup,
            }),
        1..4,
    );
    let ex = prop::option::of((
        fs_type(),
        prop::option::of(prop::sample::select(vec![1u32, 4, 16])),
    ));
    (fs, wl, ex).prop_map(|(fs, wl, exclude)| M { fs, wl, exclude })
}

fn fs_toml(i: usize, f: &Fs) -> String {
    let t = f.t.as_str();
    if f.vary == 0 {
        return format!("[[filesystem]]\nname = \"f{i}\"\ntype = \"{t}\"\n");
    }
    let values: Vec<String> = (1..=f.vary).map(|v| format!("\"{v}\"")).collect();
    if f.t == FsType::Zfs {
        // On ZFS a vary key names a property by itself.
        format!("[[filesystem]]\nname = \"f{i}-{{copies}}\"\ntype = \"zfs\"\nvary = {{ copies = [{}] }}\n", values.join(", "))
    } else {
        format!(
            "[[filesystem]]\nname = \"f{i}-{{wm}}\"\ntype = \"{t}\"\npostgres = {{ work_mem = \"{{wm}}MB\" }}\nvary = {{ wm = [{}] }}\n",
            values.join(", ")
        )
    }
}

fn wl_toml(i: usize, w: &Wl) -> String {
    let b = ["tpcb-like", "simple-update", "select-only"][w.builtin];
    let c: Vec<String> = w.clients.iter().map(|c| c.to_string()).collect();
    format!(
        "[[workload]]\nname = \"w{i}\"\nbuiltin = \"{b}\"\nscale = 1\nclients = [{}]\nduration = \"5s\"\nrepeats = {}\nwarmup = {}\n",
        c.join(", "),
        w.repeats_toml(),
        w.warmup
    )
}

/// The matrix text; `order` permutes filesystems and workloads (names stay).
fn toml(m: &M, reverse: bool) -> String {
    let mut out = String::from("name = \"prop\"\n[postgres]\nshared_buffers = \"128MB\"\n");
    let mut fs: Vec<String> =
        m.fs.iter()
            .enumerate()
            .map(|(i, f)| fs_toml(i, f))
            .collect();
    let mut wl: Vec<String> =
        m.wl.iter()
            .enumerate()
            .map(|(i, w)| wl_toml(i, w))
            .collect();
    if reverse {
        fs.reverse();
        wl.reverse();
    }
    for s in wl.iter().chain(fs.iter()) {
        out.push_str(s);
    }
    if let Some((t, c)) = m.exclude {
        out.push_str(&format!("[[exclude]]\nfs_type = \"{}\"\n", t.as_str()));
        if let Some(c) = c {
            out.push_str(&format!("clients = {c}\n"));
        }
    }
    out
}

fn ids(p: &fsmatrix::plan::Plan) -> BTreeMap<String, String> {
    p.cells
        .iter()
        .map(|c| {
            (
                format!(
                    "{}/{}/{}/{}/{}",
                    c.host, c.fs.name, c.workload.name, c.clients, c.repeat
                ),
                c.id.clone(),
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn cells_are_the_product_minus_excluded_and_dropped(m in strategy()) {
        let inv = Inventory::parse(Path::new("inv.toml"), INV.into()).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let text = toml(&m, false);
        let mx = Matrix::parse(Path::new("m.toml"), text.clone()).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        let p = plan(&inv, &mx);

        // The model, computed independently of plan().
        let (mut product, mut dropped, mut excluded) = (0usize, 0usize, 0usize);
        let mut dropped_pairs = 0usize;
        for os in [Os::Linux, Os::Freebsd, Os::Dragonfly, Os::Linux] {
            for f in &m.fs {
                let variants = f.vary.max(1);
                let runs = f.t.runs_on(os);
                if !runs {
                    dropped_pairs += variants;
                }
                for _ in 0..variants {
                    for w in &m.wl {
                        for &c in &w.clients {
                            let n = w.runs();
                            product += n;
                            let ex = m.exclude.is_some_and(|(t, cl)| t == f.t && cl.is_none_or(|x| x == c));
                            if !runs {
                                dropped += n;
                            } else if ex {
                                excluded += n;
                            }
                        }
                    }
                }
            }
        }
        prop_assert_eq!(p.cells.len(), product - excluded - dropped);
        prop_assert_eq!(p.excluded, excluded);
        prop_assert_eq!(p.dropped.len(), dropped_pairs);
        // Adaptive repeats make the ETA a range; fixed repeats a single value.
        prop_assert!(p.eta_min <= p.eta);
        for h in &p.hosts {
            let conditional = p
                .cells
                .iter()
                .filter(|c| c.host == h.host && c.is_conditional())
                .count();
            prop_assert_eq!(conditional > 0, h.eta_min < h.eta);
        }
        prop_assert!(p.cells.iter().all(|c| !c.warmup || c.adaptive.is_none()));

        // Ids unique.
        let mut all: Vec<&str> = p.cells.iter().map(|c| c.id.as_str()).collect();
        all.sort_unstable();
        all.dedup();
        prop_assert_eq!(all.len(), p.cells.len());

        // Stable under reordering of entries.
        let reordered = Matrix::parse(Path::new("m.toml"), toml(&m, true)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(ids(&plan(&inv, &reordered)), ids(&p));

        // Stable when an unrelated filesystem and workload are added.
        let more = format!(
            "{}[[filesystem]]\nname = \"extra\"\ntype = \"ext4\"\n[[workload]]\nname = \"wextra\"\nbuiltin = \"select-only\"\nscale = 2\nclients = [3]\nduration = \"7s\"\n",
            toml(&m, false)
        );
        let more = Matrix::parse(Path::new("m.toml"), more).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let bigger = ids(&plan(&inv, &more));
        for (k, id) in ids(&p) {
            prop_assert_eq!(bigger.get(&k), Some(&id), "{}", k);
        }
    }
}
