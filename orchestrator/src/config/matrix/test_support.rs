//! What the matrix tests share: parsing a matrix text, and a workload.
use std::path::Path;

use super::Matrix;
use crate::config::error::ConfigErrors;

pub(super) fn parse(text: &str) -> Result<Matrix, ConfigErrors> {
    Matrix::parse(Path::new("m.toml"), text.to_string())
}

pub(super) const WL: &str = "[[workload]]\nname = \"w\"\nbuiltin = \"tpcb-like\"\nscale = 1\nclients = [1]\nduration = \"5s\"\n";
