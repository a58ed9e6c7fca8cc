//! rlx-opt (in progress)
