//! Matrix × inventory → plan of cells (pure).
