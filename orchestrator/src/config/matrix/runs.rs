//! How often and how long runs go: repeats (fixed or adaptive), warm-up
//! runs, `run_timeout`, and the durations they are written in; the
//! matrix's values are each workload's defaults.
use std::ops::Range;

use toml::de::DeValue;

use super::types::{CiTarget, Length, Repeats, Until};
use crate::config::error::Errors;
use crate::config::walk::{int_value, type_name, Tbl, Val};

/// The longest run or estimate a matrix may name: 30 days.  Longer is a
/// typo (or hostile), and sums of such durations would overflow.
pub const MAX_DURATION_SECS: u64 = 30 * 86400;

/// "10s", "15m", "2h", "1h30m", "90s" → seconds; `None` for anything else,
/// 0, or more than [`MAX_DURATION_SECS`].
pub fn parse_duration(s: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut num = String::new();
    let mut any = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            num.push(c);
        } else {
            let n: u64 = num.parse().ok()?;
            num.clear();
            let mult = match c {
                's' => 1,
                'm' => 60,
                'h' => 3600,
                'd' => 86400,
                _ => return None,
            };
            total = total.checked_add(n.checked_mul(mult)?)?;
            any = true;
        }
    }
    if !num.is_empty() || !any || total == 0 || total > MAX_DURATION_SECS {
        return None;
    }
    Some(total)
}

/// How often and how long a workload's runs go; the matrix's values are
/// every workload's defaults.
pub(super) struct RunKeys {
    pub(super) repeats: Repeats,
    pub(super) drop_caches: bool,
    pub(super) warmup: u32,
    pub(super) progress: bool,
    /// Seconds, and where it is written (a workload too short for the
    /// matrix's is an error there).
    pub(super) run_timeout: Option<(u64, Range<usize>)>,
}

/// `run_timeout = "2m"`: a duration, as `duration` is written.
fn run_timeout_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<u64> {
    let n = v.get_ref().as_str().and_then(parse_duration);
    if n.is_none() {
        errs.push(
            &v.span(),
            format!(
                "`run_timeout` in {ctx} must be a duration such as \"90s\", \"10m\" or \"2h\" (at most 30d): how long one run may take before it is killed"
            ),
        );
    }
    n
}

/// Most counted repeats a client count may ask for.
pub const MAX_REPEATS: i64 = 1000;
/// Most warm-up runs per client count.
pub const MAX_WARMUP: i64 = 100;

/// `repeats = 3`, `repeats = { min = 3, max = 10, target_ci = "2%" }` or
/// `repeats = { min = 2, max = 10, until = "decided" }`.
fn repeats_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<Repeats> {
    const EXAMPLES: &str =
        "{ min = 3, max = 10, target_ci = \"2%\" } or { min = 2, max = 10, until = \"decided\" }";
    match v.get_ref() {
        DeValue::Integer(_) => int_value(errs, v, &format!("`repeats` in {ctx}"), 1, MAX_REPEATS)
            .map(|n| Repeats::fixed(*n.get_ref() as u32)),
        DeValue::Table(t) => {
            let what = format!("`repeats` in {ctx}");
            let tbl = Tbl {
                t,
                span: &v.span(),
                ctx: &what,
            };
            tbl.check_keys(errs, &["min", "max", "target_ci", "until"]);
            let min = tbl
                .int(errs, "min", 2, MAX_REPEATS)
                .map(|n| *n.get_ref() as u32);
            let max = tbl.int(errs, "max", 2, MAX_REPEATS);
            let target = tbl.str(errs, "target_ci").and_then(|s| {
                let t = CiTarget::parse(s.get_ref());
                if t.is_none() {
                    errs.push(
                        &s.span(),
                        format!(
                            "`target_ci` in {what} is \"{}\"; valid: a share of the mean from \"0.01%\" to \"50%\", e.g. \"2%\" (95% CI half-width)",
                            s.get_ref()
                        ),
                    );
                }
                t
            });
            let until = tbl.str(errs, "until").and_then(|s| {
                let u = Until::parse(s.get_ref());
                if u.is_none() {
                    let valid: Vec<&str> = Until::ALL.iter().map(|u| u.as_str()).collect();
                    errs.push(
                        &s.span(),
                        format!(
                            "`until` in {what} is \"{}\"; valid: {} (a variant's repeats stop once its verdict against the baseline is decided)",
                            crate::config::values::shown(s.get_ref()),
                            valid.join(", ")
                        ),
                    );
                }
                u
            });
            if let (Some(t), Some(_)) = (tbl.get("target_ci"), tbl.get("until")) {
                errs.push(
                    &t.span(),
                    format!(
                        "{what} gives both `target_ci` and `until`; valid: one rule, {EXAMPLES}"
                    ),
                );
                return None;
            }
            let mut missing = Vec::new();
            for key in ["min", "max"] {
                if tbl.get(key).is_none() {
                    missing.push(key);
                }
            }
            if tbl.get("target_ci").is_none() && tbl.get("until").is_none() {
                missing.push("target_ci` or `until");
            }
            if !missing.is_empty() {
                errs.push(
                    &v.span(),
                    format!(
                        "{what} lacks {}; adaptive repeats need `min`, `max` and a rule, e.g. {EXAMPLES} (or give a plain number)",
                        missing.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
                    ),
                );
                return None;
            }
            let (min, max) = (min?, max?);
            if tbl.get("target_ci").is_some() && target.is_none()
                || tbl.get("until").is_some() && until.is_none()
            {
                return None;
            }
            let max_v = *max.get_ref() as u32;
            if max_v < min {
                errs.push(
                    &max.span(),
                    format!("`max` in {what} is {max_v}, below `min` = {min}; valid: {min}..={MAX_REPEATS}"),
                );
                return None;
            }
            Some(Repeats {
                min,
                max: max_v,
                target_ci: target,
                until,
            })
        }
        other => {
            errs.push(
                &v.span(),
                format!(
                    "`repeats` in {ctx} must be a number (e.g. 3) or a table {EXAMPLES}, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

/// `warmup = 2`, or `true` (1) / `false` (0).
fn warmup_value(errs: &mut Errors<'_>, v: &Val<'_>, ctx: &str) -> Option<u32> {
    match v.get_ref() {
        DeValue::Boolean(b) => Some(*b as u32),
        DeValue::Integer(_) => int_value(errs, v, &format!("`warmup` in {ctx}"), 0, MAX_WARMUP)
            .map(|n| *n.get_ref() as u32),
        other => {
            errs.push(
                &v.span(),
                format!(
                    "`warmup` in {ctx} must be a number of warm-up runs (0..={MAX_WARMUP}) or true/false, found {}",
                    type_name(other)
                ),
            );
            None
        }
    }
}

/// The matrix's repeats, drop_caches, warm-up, progress and run_timeout:
/// every workload's defaults.
pub(super) fn matrix_runs(errs: &mut Errors<'_>, root: &Tbl<'_, '_>) -> RunKeys {
    RunKeys {
        repeats: root
            .get("repeats")
            .and_then(|v| repeats_value(errs, v, "the matrix"))
            .unwrap_or(Repeats::fixed(1)),
        drop_caches: root.bool(errs, "drop_caches").unwrap_or(false),
        warmup: root
            .get("warmup")
            .and_then(|v| warmup_value(errs, v, "the matrix"))
            .unwrap_or(0),
        progress: root.bool(errs, "progress").unwrap_or(false),
        run_timeout: root
            .get("run_timeout")
            .and_then(|v| run_timeout_value(errs, v, "the matrix").map(|n| (n, v.span()))),
    }
}

/// A workload's repeats, warm-up, progress, drop_caches and run_timeout,
/// the matrix's values where it gives none; a run_timeout must outlast a
/// timed run.
pub(super) fn workload_runs(
    errs: &mut Errors<'_>,
    w: &Tbl<'_, '_>,
    ctx: &str,
    d: &RunKeys,
    length: &Option<Length>,
) -> RunKeys {
    let repeats = match w.get("repeats") {
        // One sequential design spends one error rate over one family:
        // a workload of its own repeats would make two.
        Some(v) if d.repeats.until.is_some() => {
            errs.push(
                &v.span(),
                format!(
                    "`repeats` in {ctx}: the matrix's repeats are a sequential design ({}), which holds for every workload; valid: drop this `repeats`, or give the matrix fixed repeats and each workload its own",
                    d.repeats
                ),
            );
            d.repeats
        }
        Some(v) => match repeats_value(errs, v, ctx) {
            Some(r) if r.until.is_some() => {
                errs.push(
                    &v.span(),
                    format!(
                        "`until` in `repeats` of {ctx}: a sequential design is the matrix's, over every workload; valid: set `repeats = {{ min = …, max = …, until = \"decided\" }}` at the matrix's top level"
                    ),
                );
                d.repeats
            }
            Some(r) => r,
            None => d.repeats,
        },
        None => d.repeats,
    };
    let warmup = w
        .get("warmup")
        .and_then(|v| warmup_value(errs, v, ctx))
        .unwrap_or(d.warmup);
    let progress = w.bool(errs, "progress").unwrap_or(d.progress);
    let drop_caches = w.bool(errs, "drop_caches").unwrap_or(d.drop_caches);
    let run_timeout = match w.get("run_timeout") {
        Some(v) => run_timeout_value(errs, v, ctx).map(|n| (n, v.span())),
        None => d.run_timeout.clone(),
    };
    // A timed run killed before its duration is up would fail every cell.
    if let (Some((limit, at)), Some(Length::Seconds(secs))) = (&run_timeout, length) {
        if limit <= secs {
            errs.push(
                at,
                format!(
                    "`run_timeout` ({limit} s) is not longer than the `duration` of {ctx} ({secs} s): every run would be killed; valid: more than {secs} s, e.g. \"{}s\"",
                    secs.saturating_add(60)
                ),
            );
        }
    }
    RunKeys {
        repeats,
        drop_caches,
        warmup,
        progress,
        run_timeout,
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::*;
    use super::*;

    #[test]
    fn durations() {
        for (s, want) in [
            ("10s", Some(10)),
            ("15m", Some(900)),
            ("2h", Some(7200)),
            ("1h30m", Some(5400)),
            ("10", None),
            ("", None),
            ("0s", None),
            ("5x", None),
            ("m", None),
            ("30d", Some(2_592_000)),
            ("30d1s", None),
            ("18446744073709551615s", None),
            ("99999999999999999999h", None),
        ] {
            assert_eq!(parse_duration(s), want, "{s:?}");
        }
    }

    #[test]
    fn run_timeout_from_the_matrix_or_the_workload_and_longer_than_the_run() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let m = parse(&format!("name = \"m\"\nrun_timeout = \"1m\"\n{WL}{fs}"))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, Some(60));
        let m = parse(&format!(
            "name = \"m\"\nrun_timeout = \"1m\"\n{WL}run_timeout = \"20s\"\n{fs}"
        ))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, Some(20));
        let m = parse(&format!("name = \"m\"\n{WL}{fs}")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(m.workloads[0].run_timeout, None);
        // Not longer than the 5 s duration, from either place; not a duration.
        for (text, want) in [
            (
                format!("name = \"m\"\n{WL}run_timeout = \"5s\"\n{fs}"),
                "not longer than the `duration`",
            ),
            (
                format!("name = \"m\"\nrun_timeout = \"3s\"\n{WL}{fs}"),
                "valid: more than 5 s",
            ),
            (
                format!("name = \"m\"\n{WL}run_timeout = 30\n{fs}"),
                "must be a duration such as",
            ),
            (
                format!("name = \"m\"\n{WL}run_timeout = \"31d\"\n{fs}"),
                "at most 30d",
            ),
        ] {
            match parse(&text) {
                Ok(_) => panic!("accepted:\n{text}"),
                Err(e) => assert!(e.to_string().contains(want), "{want:?} not in {e}"),
            }
        }
    }

    #[test]
    fn repeats_and_warmup_forms() {
        let m = parse(
            r#"
name = "m"
repeats = { min = 3, max = 10, target_ci = "2%" }
warmup = true
[[filesystem]]
name = "e"
type = "ext4"
[[workload]]
name = "a"
builtin = "select-only"
scale = 1
clients = [1]
duration = "5s"
[[workload]]
name = "b"
builtin = "select-only"
scale = 1
clients = [1]
duration = "5s"
repeats = 4
warmup = 3
"#,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let a = &m.workloads[0];
        assert_eq!(
            (a.repeats.min, a.repeats.max, a.repeats.target_ci, a.warmup),
            (3, 10, CiTarget::parse("2%"), 1)
        );
        assert!(a.repeats.is_adaptive());
        let b = &m.workloads[1];
        assert_eq!((b.repeats, b.warmup), (Repeats::fixed(4), 3));
        assert!(!b.repeats.is_adaptive());
        // min = max with a target is a fixed count in effect.
        let same = Repeats {
            min: 3,
            max: 3,
            target_ci: CiTarget::parse("2%"),
            until: None,
        };
        assert!(!same.is_adaptive());
        assert_eq!(same.to_string(), "3");
    }

    #[test]
    fn a_sequential_design_is_the_matrix_s_and_one_rule() {
        let fs = "[[filesystem]]\nname = \"e\"\ntype = \"ext4\"\n";
        let seq = "repeats = { min = 2, max = 10, until = \"decided\" }\n";
        let m = parse(&format!("name = \"m\"\n{seq}{WL}{fs}")).unwrap_or_else(|e| panic!("{e}"));
        let r = m.workloads[0].repeats;
        assert_eq!((r.min, r.max, r.until), (2, 10, Some(Until::Decided)));
        assert!(r.is_adaptive());
        assert_eq!(r.to_string(), "2..10 until decided against the baseline");
        assert_eq!(
            m.verdicts.sequential.map(|l| (l.min, l.max)),
            Some((2, 10)),
            "the report reads the looks from the plan's rule"
        );
        for (text, want) in [
            (
                format!("name = \"m\"\nrepeats = {{ min = 2, max = 10, until = \"decided\", target_ci = \"2%\" }}\n{WL}{fs}"),
                "gives both `target_ci` and `until`; valid: one rule",
            ),
            (
                format!("name = \"m\"\nrepeats = {{ min = 2, max = 10, until = \"stable\" }}\n{WL}{fs}"),
                "`until` in `repeats` in the matrix is \"stable\"; valid: decided",
            ),
            (
                format!("name = \"m\"\nrepeats = {{ min = 2, max = 10 }}\n{WL}{fs}"),
                "lacks `target_ci` or `until`",
            ),
            (
                format!("name = \"m\"\n{seq}{WL}repeats = 4\n{fs}"),
                "the matrix's repeats are a sequential design (2..10 until decided against the baseline), which holds for every workload",
            ),
            (
                format!("name = \"m\"\n{WL}repeats = {{ min = 2, max = 5, until = \"decided\" }}\n{fs}"),
                "a sequential design is the matrix's, over every workload",
            ),
        ] {
            match parse(&text) {
                Ok(_) => panic!("accepted:\n{text}"),
                Err(e) => assert!(e.to_string().contains(want), "{want:?} not in {e}"),
            }
        }
    }
}
