//! Issues 27 and 40: the answer first, decided.  On a bundle with an
//! equivalent variant and a decided loser, every prose format (`--format
//! summary`, Markdown, HTML, JSON) leads with the same verdict lines, none
//! says "no winner", the loser is named with its ratio, interval and
//! adjusted p, the equivalent one with the margin, and the verdict words
//! are one spelling in JSON, CSV and Markdown.
use std::path::{Path, PathBuf};

use fsmatrix::results::analysis::compare::Verdict;
use fsmatrix::results::{Bundle, SweepStatus};

use crate::bundle_common::{cell, done, write_cell};

/// ext4 (the baseline, first in matrix order), xfs within ±5% of it,
/// btrfs about 0.62× its tps: three repeats each on lab1.
fn tie_and_loser(out: &Path) -> PathBuf {
    let mut b = Bundle::create(out, "answer").unwrap();
    b.write("matrix.toml", b"name = \"answer\"\nrepeats = 3\n")
        .unwrap();
    b.write("inventory.toml", b"[[host]]\nname = \"lab1\"\n")
        .unwrap();
    b.write("hosts/lab1/facts.json", b"{\"kernel\":\"6.1\"}\n")
        .unwrap();
    let runs = [
        ("ext4", [400.0, 412.0, 405.0]),
        ("xfs", [403.0, 398.0, 411.0]),
        ("btrfs", [250.0, 258.0, 252.0]),
    ];
    let mut n = 0;
    for (fs, tps) in runs {
        for (i, t) in tps.into_iter().enumerate() {
            n += 1;
            write_cell(
                &mut b,
                &cell(&format!("c{n:02}"), fs, 4, i as u32 + 1, done(t)),
            );
        }
    }
    b.close(SweepStatus::Complete).unwrap()
}

fn report(bundle: &Path, format: &str) -> String {
    let out = assert_cmd::Command::cargo_bin("fsmatrix")
        .unwrap()
        .args(["report", "--format", format])
        .arg(bundle)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "report --format {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn every_format_leads_with_the_same_verdicts_and_names_the_loser() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tie_and_loser(tmp.path());

    let json: serde_json::Value = serde_json::from_str(&report(&bundle, "json")).unwrap();
    assert_eq!(json["schema_version"], 4, "{json}");
    assert_eq!(json["margin"], "5%", "{json}");
    assert_eq!(json["correction"], "holm", "{json}");
    assert_eq!(json["families"][0]["host"], "lab1", "{json}");
    assert_eq!(json["families"][0]["comparisons"], 2, "{json}");
    let verdicts = json["verdicts"].as_array().expect("a verdicts array");
    assert_eq!(verdicts.len(), 1, "{json}");
    let v = &verdicts[0];
    let sentence = v["sentence"].as_str().unwrap().to_owned();
    // The loser is named with its ratio, interval and adjusted p; xfs is
    // equivalent within the margin.  Holm over the host's two comparisons,
    // as statsmodels has it (each side divided by its mean, the variant's
    // shifted by ln r: the delta method's log-ratio test):
    // e=[400.0,412.0,405.0]; x=[403.0,398.0,411.0]; b=[250.0,258.0,252.0]
    // welch p (x, b against e): [0.7623, 3.598e-06] → holm [0.7623, 7.197e-06]
    // ttost_ind(..., -log(1.05), log(1.05), usevar='unequal')[0]:
    //   [0.012423, 0.99999723] → holm [0.024846, 0.99999723]
    // btrfs is decided first of two (a 97.5% interval), xfs's equivalence
    // first of two (its 1 − 2·0.025 = 95% interval).
    assert!(
        sentence.starts_with(
            "tpcb, 4 clients, on lab1: `btrfs` is slower than `ext4`: 0.62× its tps (97.5% CI 0."
        ),
        "{sentence}"
    );
    assert!(
        sentence.contains("`xfs` is equivalent to `ext4` within ±5% (1.00× its tps, 95% CI 0.9")
            && sentence.contains("adjusted TOST p = 0.025)"),
        "{sentence}"
    );
    let by: std::collections::BTreeMap<&str, &str> = v["variants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            (
                x["variant"].as_str().unwrap(),
                x["verdict"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(by["btrfs"], Verdict::Slower.text());
    assert_eq!(by["xfs"], Verdict::Equivalent.text());
    let xfs = &v["variants"][0];
    assert_eq!(xfs["variant"], "xfs", "{v}");
    assert!(
        (xfs["p"].as_f64().unwrap() - 0.012422939047984246).abs() < 1e-9,
        "{v}"
    );
    assert!(
        (xfs["p_adjusted"].as_f64().unwrap() - 0.024845878095968492).abs() < 1e-9,
        "{v}"
    );
    let btrfs = &v["variants"][1];
    assert!(
        (btrfs["p_adjusted"].as_f64().unwrap() - 7.196906785128242e-06).abs() < 1e-9,
        "{v}"
    );

    // Every prose format says that sentence before anything else it says
    // about the results (its first table, its method notes).
    // The summary is wrapped at the width: compare its words.
    let summary = report(&bundle, "summary")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let md = report(&bundle, "md");
    let html = report(&bundle, "html");
    let html_sentence = sentence
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .split('`')
        .enumerate()
        .map(|(i, p)| {
            if i % 2 == 1 {
                format!("<code>{p}</code>")
            } else {
                p.to_owned()
            }
        })
        .collect::<String>();
    // "Smallest" beside "fastest": ext4 and xfs hold the data in 24 MiB
    // (du), btrfs in 34 MiB by its own accounting (btrfs used: its df used
    // less the global reserve agrees), 1.42× ext4's.
    let sizes = json["sizes"].as_array().expect("a sizes array");
    assert_eq!(sizes.len(), 1, "{json}");
    assert_eq!(sizes[0]["smallest"], serde_json::json!(["ext4", "xfs"]));
    let btrfs_size = &sizes[0]["variants"][2];
    assert_eq!(btrfs_size["variant"], "btrfs", "{json}");
    assert_eq!(btrfs_size["measure"], "btrfs_used", "{json}");
    assert_eq!(btrfs_size["on_disk_bytes"], (34u64 << 20) as f64);
    let size_sentence = sizes[0]["sentence"].as_str().unwrap().to_owned();
    assert_eq!(
        size_sentence,
        "tpcb on lab1, on disk: smallest within 1% of each other: `ext4` 24.0 MiB (du), \
         `xfs` 24.0 MiB (du), 1.00× `ext4`'s; then `btrfs` 34.0 MiB (btrfs used), 1.42× `ext4`'s."
    );
    for (name, text) in [("summary", &summary), ("md", &md)] {
        let at = text.find(&size_sentence);
        assert!(
            at.is_some_and(|at| at > text.find(&sentence).unwrap()),
            "{name} lacks the size line after the verdict:\n{text}"
        );
    }
    assert!(
        html.contains(
            "<li>tpcb on lab1, on disk: smallest within 1% of each other: <code>ext4</code>"
        ),
        "{html}"
    );
    for (name, text, said, first_other) in [
        (
            "summary",
            &summary,
            sentence.as_str(),
            "(decided at α = 0.05 per host (Holm's step-down), equivalent within ±5%)",
        ),
        ("md", &md, sentence.as_str(), "## How this was measured"),
        (
            "html",
            &html,
            html_sentence.as_str(),
            "<h2>How this was measured</h2>",
        ),
    ] {
        let at = text
            .find(said)
            .unwrap_or_else(|| panic!("{name} lacks the verdict line {said:?}:\n{text}"));
        let other = text
            .find(first_other)
            .unwrap_or_else(|| panic!("{name} lacks {first_other:?}"));
        assert!(at < other, "{name}: the answer is not first:\n{text}");
        assert!(
            !text.to_lowercase().contains("no winner"),
            "{name} says no winner:\n{text}"
        );
    }
    // The HTML's first plot is the ratio plot.
    let first_plot = html.find("<svg class=\"fsmx-plot\"").unwrap();
    assert!(
        html[first_plot..].starts_with("<svg class=\"fsmx-plot\" data-plot=\"ratio\""),
        "{}",
        &html[first_plot..first_plot + 80]
    );

    // One spelling: the verdict column of the CSV and of the Markdown table
    // say the JSON's words.
    let csv = report(&bundle, "csv");
    let mut rdr = csv::Reader::from_reader(csv.as_bytes());
    let head = rdr.headers().unwrap().clone();
    let col = head.iter().position(|h| h == "verdict").unwrap();
    let fs = head.iter().position(|h| h == "filesystem").unwrap();
    let csv_words: std::collections::BTreeMap<String, String> = rdr
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[fs].to_owned(), r[col].to_owned())
        })
        .collect();
    assert_eq!(csv_words["btrfs"], "slower", "{csv}");
    assert_eq!(csv_words["xfs"], "equivalent", "{csv}");
    assert_eq!(csv_words["ext4"], "baseline", "{csv}");
    let row = md
        .lines()
        .find(|l| l.starts_with("| lab1 | btrfs |"))
        .unwrap();
    assert!(row.contains("| slower |"), "{row}");
}

/// The summary fits the width it is given (a terminal's, or 100 when
/// stdout is not one, as here).
#[test]
fn the_summary_format_fits_100_columns_off_a_terminal() {
    let tmp = tempfile::tempdir().unwrap();
    let bundle = tie_and_loser(tmp.path());
    let s = report(&bundle, "summary");
    assert!(s.starts_with("The answer:\n"), "{s}");
    for l in s.lines() {
        assert!(l.chars().count() <= 100, "{l:?} is wider than 100");
    }
}

/// Issue 39: a bundle's names are other people's text: `--format summary`,
/// meant for a terminal, prints a variant named with an escape sequence
/// with its control characters escaped, never raw.
#[test]
fn the_summary_escapes_what_a_bundle_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let mut b = Bundle::create(tmp.path(), "escapes").unwrap();
    b.write("matrix.toml", b"name = \"escapes\"\nrepeats = 2\n")
        .unwrap();
    b.write("inventory.toml", b"[[host]]\nname = \"lab1\"\n")
        .unwrap();
    let evil = "xfs\u{1b}[2J\u{1b}]0;owned\u{7}";
    let mut n = 0;
    for (fs, tps) in [("ext4", [400.0, 410.0]), (evil, [300.0, 305.0])] {
        for (i, t) in tps.into_iter().enumerate() {
            n += 1;
            write_cell(
                &mut b,
                &cell(&format!("c{n:02}"), fs, 4, i as u32 + 1, done(t)),
            );
        }
    }
    let bundle = b.close(SweepStatus::Complete).unwrap();
    let s = report(&bundle, "summary");
    assert!(
        !s.contains('\u{1b}') && !s.contains('\u{7}'),
        "a control character reached the terminal: {s:?}"
    );
    assert!(s.contains("xfs\\u{1b}[2J"), "{s}");
}
