//! The README's quick API example: build a graph, compile it, set its params, run it.

use rlx::prelude::*;

fn main() -> Result<(), rlx::Error> {
    let mut g = Graph::new("mlp");
    let x = g.input("x", &[2, 4], DType::F32)?;
    let w = g.param("w", &[4, 3], DType::F32)?;
    let b = g.param("b", &[3], DType::F32)?;
    let y = g.matmul(x, w)?; // output shape [2, 3] inferred; Err names both shapes on mismatch
    let y = g.add(y, b)?;
    let y = g.gelu(y)?;
    g.set_outputs(&[y])?;

    let session = Session::new(Device::Auto)?; // RLX_DEVICE, else the best available device
    let mut exe = session.compile(&g)?;
    exe.set_param("w", &vec![0.1f32; 12])?; // Err on an unknown name, wrong dtype or length
    exe.set_param("b", &[0.0f32, 0.5, -0.5])?;

    let x_data: Vec<f32> = vec![1.0, 2.0, 3.0, 4.0, -1.0, -2.0, -3.0, -4.0];
    let out: Vec<Tensor> = exe.run(&[("x", &x_data)])?;
    println!("{} on {}: {:?}", out[0].shape(), session.device(), out[0].to_f32_vec());
    Ok(())
}
