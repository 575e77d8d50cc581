//! The Remote trait and its SSH implementation.
