// The fragments the tensor-core attention kernels (attention_coop.wgsl and
// attention_bwd_coop.wgsl) keep per subgroup, appended to both: 16 rows as A fragments of dims
// 16f .. 16f + 15, and accumulators of output columns 16f .. 16f + 15 (fields 4..7 are used
// only when the head-dim block DH is 128).

struct Rows {
    f0: coop_mat16x16<f16, A>,
    f1: coop_mat16x16<f16, A>,
    f2: coop_mat16x16<f16, A>,
    f3: coop_mat16x16<f16, A>,
    f4: coop_mat16x16<f16, A>,
    f5: coop_mat16x16<f16, A>,
    f6: coop_mat16x16<f16, A>,
    f7: coop_mat16x16<f16, A>,
}

struct Acc {
    a0: coop_mat16x16<f32, C>,
    a1: coop_mat16x16<f32, C>,
    a2: coop_mat16x16<f32, C>,
    a3: coop_mat16x16<f32, C>,
    a4: coop_mat16x16<f32, C>,
    a5: coop_mat16x16<f32, C>,
    a6: coop_mat16x16<f32, C>,
    a7: coop_mat16x16<f32, C>,
}
