//! Writing a case's data and a device's outputs to files, for checks made outside Rust (the
//! torch references of `scripts/check_ops_gpu_host.py`, run on the GPU host where torch is).
//!
//! Layout, per case: `DIR/<case>/meta.json` and one raw little-endian file per value,
//! `<name>.bin`. Inputs and params keep their graph names; outputs are `out0`, `out1`, … in the
//! case's output order. Element encoding by dtype: f32, i32 and u32 as 4 bytes; f16 and bf16 as
//! their 2-byte bit patterns; u8 as bytes; bool as one byte, 0 or 1. `meta.json` is
//! `{"case", "tol", "inputs", "params", "outputs"}`, each list holding
//! `{"name", "dtype", "shape", "file"}`.

use crate::runner::execute;
use crate::{Case, ParityError};
use rlx_ir::{Tensor, TensorData};
use rlx_runtime::Session;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Builds `case`, runs it on `session` (the same two runs as the parity table) and writes its
/// inputs, params and outputs under `dir/<case name>/`. Returns that folder.
pub fn dump_case(session: &Session, case: &Case, dir: &Path) -> Result<PathBuf, ParityError> {
    let built =
        case.instantiate().map_err(|source| ParityError::Build { case: case.name.clone(), source })?;
    let outputs = execute(session, case, &built)?;
    let folder = dir.join(&case.name);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        let case = case.name.clone();
        move |source| ParityError::Dump { case, path, source }
    };
    std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    let named: Vec<(String, Tensor)> =
        outputs.into_iter().enumerate().map(|(i, t)| (format!("out{i}"), t)).collect();
    let mut meta = format!("{{\"case\": {}, \"tol\": {:e}", json_str(&case.name), case.tol);
    for (key, values) in [("inputs", &built.inputs), ("params", &built.params), ("outputs", &named)] {
        let _ = write!(meta, ", \"{key}\": [");
        for (i, (name, t)) in values.iter().enumerate() {
            let file = format!("{name}.bin");
            let path = folder.join(&file);
            std::fs::write(&path, bytes(t)).map_err(io(&path))?;
            let dims: Vec<String> = t.dims().iter().map(usize::to_string).collect();
            let _ = write!(
                meta,
                "{}{{\"name\": {}, \"dtype\": \"{}\", \"shape\": [{}], \"file\": {}}}",
                if i == 0 { "" } else { ", " },
                json_str(name),
                t.dtype().name(),
                dims.join(", "),
                json_str(&file)
            );
        }
        meta.push(']');
    }
    meta.push_str("}\n");
    let path = folder.join("meta.json");
    std::fs::write(&path, meta).map_err(io(&path))?;
    Ok(folder)
}

/// The raw little-endian bytes of `t` in the encoding the module doc gives.
pub fn bytes(t: &Tensor) -> Vec<u8> {
    match t.data() {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        TensorData::BF16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::U8(v) => v.clone(),
        TensorData::Bool(v) => v.iter().map(|&b| u8::from(b)).collect(),
    }
}

/// `s` as a JSON string literal: quotes, backslashes and control characters escaped.
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rlx_runtime::Device;

    #[test]
    fn encodings_are_little_endian_at_each_dtype_size() {
        let t = Tensor::from_f32(&[2][..], vec![1.0, -2.0]).unwrap();
        assert_eq!(bytes(&t), [1.0f32.to_le_bytes(), (-2.0f32).to_le_bytes()].concat());
        let t = Tensor::from_f16(&[1][..], vec![half::f16::from_f32(1.5)]).unwrap();
        assert_eq!(bytes(&t), half::f16::from_f32(1.5).to_bits().to_le_bytes());
        let t = Tensor::from_bool(&[3][..], vec![true, false, true]).unwrap();
        assert_eq!(bytes(&t), [1, 0, 1]);
        assert_eq!(json_str("a\"b\\c\n\u{1}"), "\"a\\\"b\\\\c\\n\\u0001\"");
    }

    #[test]
    fn a_dumped_case_has_its_meta_and_every_file() {
        let case = Case::new("dump_probe_add", |c| {
            let x = c.input_f32("x", &[2, 3], -1.0, 1.0)?;
            let w = c.param_f32("w", &[3], -1.0, 1.0)?;
            Ok(vec![c.add(x, w)?])
        });
        let dir = std::env::temp_dir().join(format!("rlx-dump-{}", std::process::id()));
        let cpu = Session::new(Device::Cpu).unwrap();
        let folder = dump_case(&cpu, &case, &dir).unwrap();
        let meta = std::fs::read_to_string(folder.join("meta.json")).unwrap();
        assert!(meta.contains("\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [2, 3]"), "{meta}");
        assert!(meta.contains("\"name\": \"out0\""), "{meta}");
        let built = case.instantiate().unwrap();
        let x = std::fs::read(folder.join("x.bin")).unwrap();
        assert_eq!(x, bytes(&built.inputs[0].1));
        let out = std::fs::read(folder.join("out0.bin")).unwrap();
        let (xs, ws) = (built.inputs[0].1.to_f32_vec(), built.params[0].1.to_f32_vec());
        let want: Vec<u8> = (0..6).flat_map(|i| (xs[i] + ws[i % 3]).to_le_bytes()).collect();
        assert_eq!(out, want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
