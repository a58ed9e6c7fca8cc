//! rlx (in progress)
