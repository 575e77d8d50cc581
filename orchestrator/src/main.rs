//! The `fsmatrix` binary: CLI parsing only; every command lives in the library.
use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = fsmatrix::cli::Cli::parse();
    fsmatrix::cli::main(cli)
}
