//! `--format json`: the [`Report`] structure as it is.
use super::Report;

/// The report as pretty JSON (the [`Report`] structure; non-finite numbers
/// become null).
pub fn render_json(r: &Report) -> String {
    match serde_json::to_string_pretty(r) {
        Ok(mut s) => {
            s.push('\n');
            s
        }
        // Report holds only strings, numbers and maps with string keys.
        Err(e) => format!("{{\"error\": {:?}}}\n", e.to_string()),
    }
}
