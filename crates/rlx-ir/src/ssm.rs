//! State-space and linear-recurrence ops: what [`crate::Op::SelectiveScan`] and
//! [`crate::Op::GatedDeltaRule`] compute. Both are recurrences over a sequence axis whose state
//! starts at zero; both are f32 in and out, and a NaN anywhere in a step's operands reaches every
//! later output of that channel (nothing is clamped or skipped).
//!
//! **Selective scan** (Mamba-1, mamba_ssm's `selective_scan_ref`): u, delta [B, D, L],
//! A [D, N], Bm and C [B, G, N, L] where G divides D and channel d reads group
//! `d / (D / G)`. With δ = softplus(delta) when `delta_softplus` (PyTorch's softplus: x above 20
//! is kept as is) and δ = delta otherwise, for every (b, d) and n, from h₋₁ = 0:
//!
//! ```text
//! h_t[n] = exp(δ_t · A[d, n]) · h_{t-1}[n] + δ_t · Bm[g, n, t] · u_t
//! y_t    = Σ_n C[g, n, t] · h_t[n]
//! ```
//!
//! The skip term `D·u`, the gate `y·silu(z)` and the bias added to delta before the softplus are
//! not part of the op: rlx-nn's `selective_scan` adds them around it with elementwise ops.
//!
//! **Gated delta rule** (GatedDeltaNet; fla's `naive_recurrent_gated_delta_rule`, transformers'
//! `torch_recurrent_gated_delta_rule`): q, k [B, L, H, K], v [B, L, H, V], g and beta [B, L, H],
//! state S [K, V] per (b, h), from S₋₁ = 0:
//!
//! ```text
//! S      = exp(g_t) · S_{t-1}
//! S      = S + k_t ⊗ (beta_t · (v_t − Sᵀ k_t))      (= α S (I − β k kᵀ) + β k vᵀ, transposed)
//! o_t    = Sᵀ (scale · q_t)
//! ```
//!
//! g is the log of the decay α (so α = exp(g) ≤ 1 for g ≤ 0). The optional L2 normalisation of
//! q and k is not part of the op (rlx-nn's `gated_delta_rule` adds it).

/// Which result of a recurrence a node is: the per-step outputs or the state after the last
/// step. Like a top-k's two outputs, the two are separate nodes with equal attributes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ScanOutput {
    /// The per-step outputs: y [B, D, L] of a selective scan, o [B, L, H, V] of a delta rule.
    Y,
    /// The state after the last step: [B, D, N] of a selective scan (zeros when L = 0),
    /// [B, H, K, V] of a delta rule.
    LastState,
}

impl ScanOutput {
    /// `y` or `last_state`, as the text dump prints it.
    pub fn name(self) -> &'static str {
        match self {
            ScanOutput::Y => "y",
            ScanOutput::LastState => "last_state",
        }
    }
}
