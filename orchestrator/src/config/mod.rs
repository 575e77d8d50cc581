//! Inventory and matrix: parse and validate.
