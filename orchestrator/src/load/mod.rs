//! pgbench command lines and output parsing.
