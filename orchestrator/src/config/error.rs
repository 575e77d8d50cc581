//! Configuration errors: every one names a file, a line and a column, and says
//! what would be valid.  They are collected, never "first error only".
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

/// One problem in an inventory or a matrix file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based line.
    pub line: usize,
    /// 1-based column, in characters.
    pub column: usize,
    /// A lowercase fragment that reads after "failed to load …: ".
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: error: {}",
            self.file.display(),
            self.line,
            self.column,
            self.message
        )
    }
}

/// Every error found in the inputs, in file then position order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }
    /// Sort by file, line, column and drop exact duplicates.
    pub(crate) fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.file, a.line, a.column, &a.message).cmp(&(&b.file, b.line, b.column, &b.message))
        });
        self.0.dedup();
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}

/// The text of one input file, to turn byte spans into line:column.
pub(crate) struct Source {
    pub path: PathBuf,
    pub text: String,
    /// Byte offset of the start of every line.
    line_starts: Vec<usize>,
}

impl Source {
    pub fn new(path: &Path, text: String) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Source {
            path: path.to_path_buf(),
            text,
            line_starts,
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line];
        let col = self
            .text
            .get(start..offset)
            .map(|s| s.chars().count())
            .unwrap_or(offset - start);
        (line + 1, col + 1)
    }

    pub fn error(&self, span: &Range<usize>, message: impl Into<String>) -> ConfigError {
        let (line, column) = self.line_col(span.start);
        ConfigError {
            file: self.path.clone(),
            line,
            column,
            message: message.into(),
        }
    }
}

/// Collects errors for one file.
pub(crate) struct Errors<'s> {
    pub src: &'s Source,
    pub list: Vec<ConfigError>,
}

impl<'s> Errors<'s> {
    pub fn new(src: &'s Source) -> Self {
        Errors {
            src,
            list: Vec::new(),
        }
    }
    pub fn push(&mut self, span: &Range<usize>, message: impl Into<String>) {
        self.list.push(self.src.error(span, message));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_characters_from_one() {
        let s = Source::new(Path::new("f.toml"), "a = 1\nbé = \"x\"\n".into());
        assert_eq!(s.line_col(0), (1, 1));
        assert_eq!(s.line_col(6), (2, 1));
        // "bé = " is 6 bytes but 5 characters: the quote is column 6.
        assert_eq!(s.line_col(6 + 6), (2, 6));
        assert_eq!(
            s.error(&(6..7), "boom").to_string(),
            "f.toml:2:1: error: boom"
        );
    }
}
