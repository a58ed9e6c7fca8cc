//! The one weight loader: every param a model's graph declares, read by name in the graph's
//! order ([`load_params`]), and the weights set on a compiled executable ([`set_weights`],
//! [`set_weights_async`]). The embedder, the decoder and Mamba all load and set through these.

use crate::error::Result;
use rlx_ir::{Graph, TensorType};
use rlx_runtime::{Executable, HostData};

/// A loaded weight's values, as an executable takes them.
pub trait Weight {
    /// The values, as `set_param` takes them.
    fn host_data(&self) -> &dyn HostData;
}

/// Every param of `graph` (a probe: the params do not depend on the shape), each read by
/// `load(name, type)`, in the graph's order. The first error stops the loading.
pub fn load_params<T>(
    graph: &Graph,
    mut load: impl FnMut(&str, &TensorType) -> Result<T>,
) -> Result<Vec<(String, T)>> {
    graph.params().iter().map(|(name, _, ty)| Ok((name.to_string(), load(name, ty)?))).collect()
}

/// Sets every weight on `exe` (once per compile group: a group shares its params).
pub fn set_weights<W: Weight>(exe: &mut Executable, weights: &[(String, W)]) -> Result<()> {
    for (name, data) in weights {
        exe.set_param(name, data.host_data())?;
    }
    Ok(())
}

/// [`set_weights`] without blocking (the web).
pub async fn set_weights_async<W: Weight>(exe: &mut Executable, weights: &[(String, W)]) -> Result<()> {
    for (name, data) in weights {
        exe.set_param_async(name, data.host_data()).await?;
    }
    Ok(())
}
