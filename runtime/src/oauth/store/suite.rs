//! Store suite (placeholder).
