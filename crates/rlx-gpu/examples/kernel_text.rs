//! Kernel development beside `RLX_KERNEL_DIR` / `RLX_KERNEL_DUMP` (rlx-vulkan): the expanded
//! WGSL of a variant, as a driver compiles it, and a check that an edited file compiles to
//! SPIR-V, both on a machine without the GPU the variant is for.
//!
//! ```sh
//! cargo run -p rlx-gpu --example kernel_text -- list              # every variant's name
//! cargo run -p rlx-gpu --example kernel_text -- show NAME > NAME.wgsl
//! cargo run -p rlx-gpu --example kernel_text -- check DIR/NAME.wgsl  # parse, validate, SPIR-V
//! cargo run -p rlx-gpu --example kernel_text -- spirv DIR/NAME.wgsl OUT.spv  # for spirv-dis
//! ```

use rlx_gpu::{variants, ParamsBinding};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("kernel_text: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    match args {
        [cmd] if cmd == "list" => {
            for v in variants() {
                println!("{}", v.name);
            }
            Ok(())
        }
        [cmd, name] if cmd == "show" => {
            let v = variants()
                .into_iter()
                .find(|v| v.name == *name)
                .ok_or_else(|| format!("no variant is named '{name}' (`list` names them)"))?;
            let text = v.wgsl(ParamsBinding::Immediate).map_err(|e| e.to_string())?;
            print!("{text}");
            Ok(())
        }
        [cmd, path] if cmd == "check" => {
            let words = spirv_of(path)?;
            println!("{path}: {} SPIR-V words", words.len());
            Ok(())
        }
        [cmd, path, out] if cmd == "spirv" => {
            let words = spirv_of(path)?;
            let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
            std::fs::write(out, bytes).map_err(|e| format!("writing {out}: {e}"))
        }
        _ => {
            Err("usage: kernel_text list | show NAME | check FILE.wgsl | spirv FILE.wgsl OUT.spv".to_string())
        }
    }
}

/// The SPIR-V of the WGSL file at `path`, through the same parse and write the build uses.
fn spirv_of(path: &str) -> Result<Vec<u32>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("reading {path}: {e}"))?;
    let (module, info) = rlx_gpu::spirv::parse(&text, path)?;
    rlx_gpu::spirv::write(&module, &info, path)
}
