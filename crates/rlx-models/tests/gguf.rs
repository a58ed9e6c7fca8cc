//! The GGUF reader on files written by gguf-py's GGUFWriter (scripts/make_gguf_fixtures.py and,
//! for tiny_mixes.gguf, scripts/make_quant_fixtures.py):
//! metadata of every kind, tensors of every type rlx reads, values against gguf-py's
//! dequantization (bit for bit, NaN matching NaN), and the decoder config.

// Test helpers unwrap and panic: a failure is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlx_ir::QuantType;
use rlx_models::gguf::{GgmlType, GgufArray, GgufError, GgufValue, GgufValueType};
use rlx_models::{gguf_config, GgufFile, ModelError};
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/gguf").join(name)
}

fn open(name: &str) -> GgufFile {
    GgufFile::open(fixture(name)).unwrap_or_else(|e| panic!("{e}"))
}

/// (name, type, shape, values) of every tensor a fixture's expected.json lists.
fn expected(stem: &str) -> Vec<(String, String, Vec<usize>, Vec<f32>)> {
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(&format!("{stem}.expected.json"))).unwrap())
            .unwrap();
    let raw = std::fs::read(fixture(&format!("{stem}.expected.f32"))).unwrap();
    let values: Vec<f32> = raw.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
    doc["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let shape: Vec<usize> =
                t["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
            let offset = t["offset"].as_u64().unwrap() as usize;
            let n: usize = shape.iter().product();
            let name = t["name"].as_str().unwrap().to_string();
            (name, t["type"].as_str().unwrap().to_string(), shape, values[offset..offset + n].to_vec())
        })
        .collect()
}

fn same(a: &[f32], b: &[f32]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()))
}

fn check_tensors(file: &GgufFile, stem: &str) {
    let want = expected(stem);
    assert_eq!(file.tensors().len(), want.len());
    for (info, (name, ty, shape, values)) in file.tensors().iter().zip(&want) {
        assert_eq!((&info.name, info.ty.name(), &info.shape), (name, ty.as_str(), shape));
        let view = file.tensor(name).unwrap();
        assert_eq!((view.name, view.ty, &view.shape), (name.as_str(), info.ty, shape));
        assert_eq!(view.bytes.len(), info.n_bytes);
        let got = view.to_f32().unwrap();
        assert!(same(&got, values), "{stem}: tensor {name} ({ty}) differs from gguf-py's values");
    }
}

#[test]
fn tiny_llama_tensors_match_gguf_py() {
    let f = open("tiny_llama.gguf");
    assert_eq!((f.version(), f.alignment()), (3, 32));
    assert_eq!(f.data_offset() % 32, 0);
    let types: Vec<GgmlType> = f.tensors().iter().map(|t| t.ty).collect();
    assert_eq!(types, GgmlType::ALL[..8], "the fixture holds one tensor of each of the first eight types");
    check_tensors(&f, "tiny_llama");
    let q = f.tensor("test.q4_k").unwrap();
    assert_eq!(
        (q.ty, q.shape.as_slice(), q.bytes.len()),
        (GgmlType::Quant(QuantType::Q4K), &[2, 256][..], 288)
    );
    for t in f.tensors() {
        assert_eq!(t.offset % 32, 0, "{}", t.name);
    }
}

#[test]
fn tiny_mixes_tensors_match_gguf_py() {
    // One tensor of each block type llama.cpp's mixes add (scripts/make_quant_fixtures.py).
    let f = open("tiny_mixes.gguf");
    let types: Vec<GgmlType> = f.tensors().iter().map(|t| t.ty).collect();
    assert_eq!(types, GgmlType::ALL[8..], "the fixture holds one tensor of each of the last seven types");
    check_tensors(&f, "tiny_mixes");
    let q = f.tensor("test.q5_0").unwrap();
    assert_eq!(
        (q.ty, q.shape.as_slice(), q.bytes.len()),
        (GgmlType::Quant(QuantType::Q5_0), &[2, 96][..], 132)
    );
}

#[test]
fn tiny_qwen3_honours_its_alignment() {
    let f = open("tiny_qwen3.gguf");
    assert_eq!(f.alignment(), 64);
    assert_eq!(f.data_offset() % 64, 0);
    assert_eq!(f.tensors()[1].offset % 64, 0);
    check_tensors(&f, "tiny_qwen3");
}

#[test]
fn metadata_of_every_kind_reads_back() {
    let f = open("tiny_llama.gguf");
    let m = |k: &str| f.metadata(k).unwrap_or_else(|| panic!("{k} missing")).clone();
    assert_eq!(m("general.architecture"), GgufValue::String("llama".into()));
    assert_eq!(m("rlx.test.u8"), GgufValue::U8(200));
    assert_eq!(m("rlx.test.i8"), GgufValue::I8(-100));
    assert_eq!(m("rlx.test.u16"), GgufValue::U16(60000));
    assert_eq!(m("rlx.test.i16"), GgufValue::I16(-30000));
    assert_eq!(m("llama.block_count"), GgufValue::U32(2));
    assert_eq!(m("rlx.test.i32"), GgufValue::I32(-2_000_000_000));
    assert_eq!(m("rlx.test.u64"), GgufValue::U64((1 << 40) + 7));
    assert_eq!(m("rlx.test.i64"), GgufValue::I64(-(1 << 40) - 7));
    assert_eq!(m("llama.rope.freq_base"), GgufValue::F32(500000.0));
    assert_eq!(m("rlx.test.f64"), GgufValue::F64(0.1));
    assert_eq!(m("tokenizer.ggml.add_bos_token"), GgufValue::Bool(true));
    assert_eq!(m("rlx.test.false"), GgufValue::Bool(false));
    assert_eq!(m("rlx.test.bools"), GgufValue::Array(GgufArray::Bool(vec![true, false, true])));
    let nested = GgufArray::Array(vec![
        GgufArray::I32(vec![1, 2, 3]),
        GgufArray::I32(vec![4]),
        GgufArray::I32(vec![5, 6]),
    ]);
    assert_eq!(m("rlx.test.nested"), GgufValue::Array(nested));
    assert_eq!(f.metadata_entries().count(), 31);
    assert!(f.metadata("no.such.key").is_none());

    let tokens = f.get_str_array("tokenizer.ggml.tokens").unwrap();
    assert_eq!(tokens.len(), 32);
    assert_eq!(&tokens[..8], ["<unk>", "<s>", "</s>", "Ġthe", "Ġa", "é", "日本", "<0x0A>"]);
    assert_eq!(f.get_f32_array("tokenizer.ggml.scores").unwrap()[..3], [0.0, -0.25, -0.5]);
    assert_eq!(f.get_i32_array("tokenizer.ggml.token_type").unwrap()[..4], [2, 3, 3, 1]);
    assert_eq!(f.get_str_array("tokenizer.ggml.merges").unwrap(), ["Ġ t", "Ġt he", "日 本"]);
    assert_eq!(f.get_str("tokenizer.ggml.model").unwrap(), "gpt2");
    assert_eq!(f.get_u32("tokenizer.ggml.bos_token_id").unwrap(), 1);
    assert_eq!(f.get_f32("llama.attention.layer_norm_rms_epsilon").unwrap(), 1e-5);
    assert!(f.get_bool("tokenizer.ggml.add_bos_token").unwrap());
    // Integer getters take any integer type whose value fits.
    assert_eq!(f.get_u64("rlx.test.u16").unwrap(), 60000);
    assert_eq!(f.get_i64("rlx.test.i8").unwrap(), -100);
    assert_eq!(f.get_usize("rlx.test.u64").unwrap(), (1 << 40) + 7);
    assert_eq!(f.get_array("rlx.test.nested").unwrap().elem_type(), GgufValueType::Array);
}

#[test]
fn wrong_types_name_the_key_and_what_was_found() {
    let f = open("tiny_llama.gguf");
    let path = fixture("tiny_llama.gguf");
    let source = |e: ModelError| match e {
        ModelError::Gguf { path: p, source } => {
            assert_eq!(p, path);
            source
        }
        other => panic!("not a GGUF error: {other}"),
    };
    let e = source(f.get_u32("general.architecture").unwrap_err());
    assert_eq!(
        e,
        GgufError::WrongType {
            key: "general.architecture".into(),
            expected: "u32",
            found: "string \"llama\"".into()
        }
    );
    let e = f.get_str("llama.block_count").unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("tiny_llama.gguf") && msg.contains("'llama.block_count' holds u32 2, expected string"),
        "{msg}"
    );
    let e = source(f.get_u32("rlx.test.i8").unwrap_err());
    assert!(matches!(e, GgufError::BadValue { ref key, .. } if key == "rlx.test.i8"), "{e}");
    let e = source(f.get_u32("rlx.test.u64").unwrap_err());
    assert_eq!(e.to_string(), "metadata key 'rlx.test.u64' = u64 1099511627783: does not fit u32");
    let e = source(f.get_str_array("tokenizer.ggml.scores").unwrap_err());
    assert!(e.to_string().contains("holds array of 32 f32, expected array of string"), "{e}");
    assert_eq!(source(f.get_f32("nope").unwrap_err()), GgufError::MissingKey { key: "nope".into() });
    let e = source(f.tensor("blk.0.attn_q.weight").unwrap_err());
    assert_eq!(e, GgufError::NoTensor { name: "blk.0.attn_q.weight".into(), count: 8 });
}

#[test]
fn decoder_configs() {
    let c = gguf_config(&open("tiny_llama.gguf")).unwrap();
    assert_eq!(c.architecture, "llama");
    assert_eq!((c.hidden_size, c.num_layers, c.intermediate_size), (64, 2, 176));
    assert_eq!((c.num_heads, c.num_kv_heads, c.head_dim, c.rope_dims), (4, 2, 16, 16));
    assert_eq!((c.rms_norm_eps, c.rope_theta), (1e-5, 500000.0));
    assert_eq!((c.max_position_embeddings, c.vocab_size, c.tied_embeddings), (128, 32, true));

    let c = gguf_config(&open("tiny_qwen3.gguf")).unwrap();
    assert_eq!(c.architecture, "qwen3");
    assert_eq!((c.hidden_size, c.num_heads, c.num_kv_heads), (64, 4, 1));
    assert_eq!((c.head_dim, c.rope_dims), (32, 32), "key_length sets the head dim, not hidden / heads");
    assert_eq!((c.rms_norm_eps, c.rope_theta, c.vocab_size), (1e-6, 1e6, 10));
    assert!(!c.tied_embeddings, "the file has output.weight");
}
