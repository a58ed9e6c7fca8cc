//! rlx-cpu (in progress)
