//! rlx-cpu's block decoders against gguf-py's `quants.dequantize`, for every ggml format rlx
//! reads ([`QuantType::GGUF`]); fixtures made by scripts/make_gguf_fixtures.py (Q8_0, Q4_0,
//! Q4_K, Q5_K, Q6_K) and scripts/make_quant_fixtures.py (Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL,
//! IQ4_XS).
//!
//! The comparison is bit for bit: both sides widen the f16 scales exactly and round the same
//! f32 products in the same order, once each (no FMA). The one allowance is NaN, which matches
//! any NaN: its payload depends on which operand of a product carried it and on whether the
//! f16 widening quiets a signalling NaN, neither of which the format defines.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_cpu::quant::dequantize;
use rlx_ir::QuantType;
use std::path::PathBuf;

fn fixture(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quant").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

#[test]
fn every_type_matches_gguf_py_bit_for_bit() {
    for ty in QuantType::GGUF {
        let stem = ty.name().to_lowercase();
        let blocks = fixture(&format!("{stem}.blocks"));
        let want = f32s(&fixture(&format!("{stem}.f32")));
        assert_eq!(want.len(), ty.elem_count(blocks.len()).unwrap(), "{ty}: fixture sizes disagree");
        let mut got = vec![0.0f32; want.len()];
        dequantize(ty, &blocks, &mut got).unwrap();
        let bad: Vec<usize> = (0..want.len()).filter(|&i| !same(got[i], want[i])).collect();
        let first: Vec<String> =
            bad.iter().take(5).map(|&i| format!("[{i}] got {} want {}", got[i], want[i])).collect();
        assert!(bad.is_empty(), "{ty}: {} values differ, first: {}", bad.len(), first.join(", "));
        // The fixtures lead with blocks whose first scale is NaN and ±inf: check that they
        // reached the output rather than being skipped.
        assert!(got.iter().any(|v| v.is_nan()), "{ty}: no NaN from the NaN-scale block");
        assert!(got.iter().any(|v| v.is_infinite()), "{ty}: no inf from the inf-scale blocks");
    }
}

#[test]
fn blocks_decode_independently() {
    // Decoding one block at a time gives the same values as decoding the whole run.
    for ty in QuantType::GGUF {
        let stem = ty.name().to_lowercase();
        let blocks = fixture(&format!("{stem}.blocks"));
        let mut whole = vec![0.0f32; ty.elem_count(blocks.len()).unwrap()];
        dequantize(ty, &blocks, &mut whole).unwrap();
        for (b, w) in blocks.chunks_exact(ty.block_bytes()).zip(whole.chunks_exact(ty.block_elems())) {
            let mut one = vec![0.0f32; ty.block_elems()];
            dequantize(ty, b, &mut one).unwrap();
            assert!(one.iter().zip(w).all(|(a, b)| same(*a, *b)), "{ty}");
        }
    }
}
