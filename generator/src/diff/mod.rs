//! Release diffs: what changed between two generated catalogues.
