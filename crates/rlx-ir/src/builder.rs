//! Builder methods (in progress).
