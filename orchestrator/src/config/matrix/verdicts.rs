//! How the report decides a comparison: the equivalence `margin` and the
//! multiplicity `correction`, two top-level matrix keys.  The plan records
//! both (data/plan.json), so a bundle's report decides with its own rule;
//! a plan from before the keys reads as [`VerdictRule::default`].
//!
//! The statistics themselves are `results::analysis` (`compare`, `family`);
//! this file only checks what the user typed.
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::config::error::Errors;
use crate::config::values::shown;
use crate::config::walk::Tbl;

/// The largest margin: beyond ±50% "equivalent" says nothing an operator
/// would act on.
pub const MAX_MARGIN_BASIS_POINTS: u32 = 5_000;

/// An equivalence margin δ: two variants are equivalent when the ratio of
/// their means lies in [1/(1+δ), 1+δ].  Held in hundredths of a percent
/// (`"5%"` is 500, `"2.5%"` 250), so that a matrix stays `Eq`; written and
/// read as its text (`"5%"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Margin(u32);

impl Margin {
    /// The default: ±5%.
    pub const DEFAULT: Margin = Margin(500);

    /// δ as a fraction (`"5%"` → 0.05).
    pub fn fraction(self) -> f64 {
        f64::from(self.0) / 10_000.0
    }

    /// `"5%"`, `"2.5%"`, `"0.25%"`: a number with at most two decimals and
    /// a `%`, above 0 and at most [`MAX_MARGIN_BASIS_POINTS`].
    pub fn parse(s: &str) -> Result<Margin, String> {
        let bad = || {
            format!(
                "invalid margin `{}`; valid: a percentage above 0% and at most {}% with at most two decimals, such as \"5%\" or \"2.5%\"",
                shown(s),
                MAX_MARGIN_BASIS_POINTS / 100
            )
        };
        let num = s.strip_suffix('%').ok_or_else(bad)?;
        let (whole, frac) = num.split_once('.').unwrap_or((num, "0"));
        let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty()
            || whole.len() > 2
            || frac.is_empty()
            || frac.len() > 2
            || !digits(whole)
            || !digits(frac)
        {
            return Err(bad());
        }
        let frac_bp = format!("{frac:0<2}");
        let bp = whole.parse::<u32>().map_err(|_| bad())? * 100
            + frac_bp.parse::<u32>().map_err(|_| bad())?;
        if bp == 0 || bp > MAX_MARGIN_BASIS_POINTS {
            return Err(bad());
        }
        Ok(Margin(bp))
    }
}

impl Default for Margin {
    fn default() -> Self {
        Margin::DEFAULT
    }
}

impl fmt::Display for Margin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = (self.0 / 100, self.0 % 100);
        match frac {
            0 => write!(f, "{whole}%"),
            f2 if f2 % 10 == 0 => write!(f, "{whole}.{}%", f2 / 10),
            f2 => write!(f, "{whole}.{f2:02}%"),
        }
    }
}

impl Serialize for Margin {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Margin {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Margin::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// How the error rate is held over a host's comparisons (the family).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Correction {
    /// Holm's step-down (Holm 1979): the family-wise error rate at α.
    #[default]
    Holm,
    /// Each comparison at α on its own (the family's error rate grows with
    /// its size; the report says so).
    None,
}

impl Correction {
    pub const ALL: [Correction; 2] = [Correction::Holm, Correction::None];

    pub fn as_str(self) -> &'static str {
        match self {
            Correction::Holm => "holm",
            Correction::None => "none",
        }
    }

    pub fn parse(s: &str) -> Option<Correction> {
        Correction::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

impl fmt::Display for Correction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The matrix's decision rule: margin, correction, and the looks of a
/// sequential design (the matrix's `repeats = { …, until = "decided" }`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VerdictRule {
    #[serde(default)]
    pub margin: Margin,
    #[serde(default)]
    pub correction: Correction,
    /// `None`: a fixed (or CI-target) design, decided once over every
    /// counted repeat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sequential: Option<Looks>,
}

/// The looks of a sequential design: after each round from `min` to `max`
/// counted repeats per arm (`results::analysis::sequential`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Looks {
    pub min: u32,
    pub max: u32,
}

/// `margin` and `correction` of the matrix (their defaults when absent),
/// each bad value an error at its span.
pub(super) fn verdict_rule(errs: &mut Errors<'_>, root: &Tbl<'_, '_>) -> VerdictRule {
    let margin = match root.str(errs, "margin") {
        None => Margin::DEFAULT,
        Some(v) => Margin::parse(v.get_ref()).unwrap_or_else(|why| {
            errs.push(&v.span(), why);
            Margin::DEFAULT
        }),
    };
    let correction = match root.str(errs, "correction") {
        None => Correction::Holm,
        Some(v) => Correction::parse(v.get_ref()).unwrap_or_else(|| {
            let valid: Vec<&str> = Correction::ALL.iter().map(|c| c.as_str()).collect();
            errs.push(
                &v.span(),
                format!(
                    "unknown correction `{}`; valid: {} (how the error rate is held over a host's comparisons)",
                    shown(v.get_ref()),
                    valid.join(", ")
                ),
            );
            Correction::Holm
        }),
    };
    VerdictRule {
        margin,
        correction,
        sequential: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn margins_parse_and_print_as_written() {
        for (text, fraction) in [
            ("5%", 0.05),
            ("2.5%", 0.025),
            ("0.25%", 0.0025),
            ("10%", 0.1),
            ("50%", 0.5),
        ] {
            let m = Margin::parse(text).unwrap();
            assert!((m.fraction() - fraction).abs() < 1e-15, "{text}");
            assert_eq!(m.to_string(), text);
        }
        assert_eq!(Margin::parse("2.50%").unwrap().to_string(), "2.5%");
        for bad in [
            "5", "0%", "0.00%", "50.01%", "-5%", "5.%", ".5%", "1.234%", "5 %", "%", "100%",
        ] {
            let e = Margin::parse(bad).unwrap_err();
            assert!(e.starts_with("invalid margin"), "{bad}: {e}");
        }
        assert_eq!(Margin::default().to_string(), "5%");
    }

    #[test]
    fn a_rule_reads_back_from_json_and_defaults_when_absent() {
        let r: VerdictRule =
            serde_json::from_str(r#"{"margin":"2.5%","correction":"none"}"#).unwrap();
        assert_eq!(r.margin, Margin::parse("2.5%").unwrap());
        assert_eq!(r.correction, Correction::None);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"margin":"2.5%","correction":"none"}"#
        );
        let d: VerdictRule = serde_json::from_str("{}").unwrap();
        assert_eq!(d, VerdictRule::default());
        assert!(serde_json::from_str::<VerdictRule>(r#"{"margin":"5"}"#).is_err());
    }
}
