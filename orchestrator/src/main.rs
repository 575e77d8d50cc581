//! The `fsmatrix` binary: the commands layer does the rest.
fn main() -> std::process::ExitCode {
    fsmatrix::commands::main()
}
