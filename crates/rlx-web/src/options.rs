//! What the JavaScript side may ask for, parsed and checked without a browser.

use rlx_ir::DType;
use rlx_runtime::{Device, Precision};

/// The files an embedder fetches from its base URL: (file, required).
pub const MODEL_FILES: [(&str, bool); 5] = [
    ("config.json", true),
    ("tokenizer.json", true),
    ("model.safetensors", true),
    ("sentence_bert_config.json", false),
    ("1_Pooling/config.json", false),
];

/// The device a page asks for: "auto" (or nothing) is WebGPU with the CPU as the fallback,
/// "webgpu" (or "gpu") WebGPU or an error, "cpu" the CPU backend.
pub fn parse_device(name: Option<&str>) -> Result<Device, String> {
    match name.map(|n| n.trim().to_ascii_lowercase()).as_deref() {
        None | Some("") | Some("auto") => Ok(Device::Auto),
        Some("webgpu") | Some("gpu") => Ok(Device::Gpu),
        Some("cpu") => Ok(Device::Cpu),
        Some(other) => Err(format!("unknown device '{other}'; use \"auto\", \"webgpu\" or \"cpu\"")),
    }
}

/// The precision a page asks for: "f32" (or nothing), "f16" or "mixed".
pub fn parse_precision(name: Option<&str>) -> Result<Precision, String> {
    match name.map(str::trim).filter(|n| !n.is_empty()) {
        None => Ok(Precision::F32),
        Some(n) => n.parse::<Precision>().map_err(|e| format!("precision '{n}': {e}")),
    }
}

/// How a page names a device: "webgpu" for rlx's GPU backend (WebGPU in a browser), "cpu".
pub fn device_label(device: Device) -> &'static str {
    match device {
        Device::Gpu => "webgpu",
        Device::Cpu => "cpu",
        Device::Vulkan => "vulkan",
        Device::Auto => "auto",
    }
}

/// `file` under `base` (with or without a trailing slash; an empty base is the page's folder).
pub fn file_url(base: &str, file: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.is_empty() {
        file.to_string()
    } else {
        format!("{base}/{file}")
    }
}

/// Refuses a precision the device cannot store: f16 without f16 support (WebGPU's
/// `shader-f16`, which SwiftShader lacks), naming the device and the fix.
pub fn check_precision(precision: Precision, dtypes: &[DType], device: &str) -> Result<(), String> {
    if precision == Precision::F16 && !dtypes.contains(&DType::F16) {
        return Err(format!(
            "f16 precision needs f16 storage, which {device} does not have (WebGPU feature \
             'shader-f16'); load with precision \"f32\" instead"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn devices_parse_and_unknown_names_list_the_valid_ones() {
        assert_eq!(parse_device(None), Ok(Device::Auto));
        assert_eq!(parse_device(Some(" WebGPU ")), Ok(Device::Gpu));
        assert_eq!(parse_device(Some("cpu")), Ok(Device::Cpu));
        let e = parse_device(Some("cuda")).unwrap_err();
        assert!(e.contains("cuda") && e.contains("webgpu"), "{e}");
        assert_eq!(device_label(Device::Gpu), "webgpu");
        assert_eq!(device_label(Device::Cpu), "cpu");
    }

    #[test]
    fn precisions_parse() {
        assert_eq!(parse_precision(None), Ok(Precision::F32));
        assert_eq!(parse_precision(Some("f16")), Ok(Precision::F16));
        assert!(parse_precision(Some("f8")).unwrap_err().contains("f8"));
    }

    #[test]
    fn urls_join_with_one_slash() {
        assert_eq!(file_url("model/", "config.json"), "model/config.json");
        assert_eq!(file_url("http://h/m", "a/b.json"), "http://h/m/a/b.json");
        assert_eq!(file_url("", "tokenizer.json"), "tokenizer.json");
    }

    #[test]
    fn f16_is_refused_without_f16_storage_and_f32_always_passes() {
        let e = check_precision(Precision::F16, &[DType::F32], "SwiftShader").unwrap_err();
        assert!(e.contains("shader-f16") && e.contains("SwiftShader") && e.contains("f32"), "{e}");
        assert!(check_precision(Precision::F16, &[DType::F32, DType::F16], "gpu").is_ok());
        assert!(check_precision(Precision::F32, &[DType::F32], "SwiftShader").is_ok());
    }
}
