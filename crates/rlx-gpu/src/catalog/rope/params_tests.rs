use super::params::*;
use rlx_ir::{AttnLayout, RopeStyle};

#[test]
fn params_size_matches_the_wgsl_struct() {
    assert_eq!(std::mem::size_of::<RopeParams>(), 32);
}

#[test]
fn rope_reads_seq_and_heads_per_layout() {
    let (p, grid) = RopeParams::new(RopeStyle::NeoX, AttnLayout::Bshd, 4, &[2, 5, 3, 8]).unwrap();
    assert_eq!((p.numel, p.d, p.rot, p.s, p.h, p.bhsd, p.gptj), (240, 8, 4, 5, 3, 0, 0));
    assert_eq!(grid, [1, 1, 1]);
    let (p, _) = RopeParams::new(RopeStyle::GptJ, AttnLayout::Bhsd, 8, &[2, 5, 3, 8]).unwrap();
    assert_eq!((p.s, p.h, p.bhsd, p.gptj), (3, 5, 1, 1));
    assert!(RopeParams::new(RopeStyle::NeoX, AttnLayout::Bshd, 3, &[1, 1, 1, 4]).is_err());
    assert!(RopeParams::new(RopeStyle::NeoX, AttnLayout::Bshd, 6, &[1, 1, 1, 4]).is_err());
    assert!(RopeParams::new(RopeStyle::NeoX, AttnLayout::Bshd, 2, &[1, 4]).is_err());
}
