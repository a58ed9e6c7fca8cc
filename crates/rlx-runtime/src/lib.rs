//! rlx-runtime (in progress)
