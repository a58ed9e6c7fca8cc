//! The pipelines of one device, built on first use and kept for the device's life, keyed by
//! [`KernelKey`]: the same table in both drivers, whatever their pipeline type.

use super::lock;
use crate::KernelKey;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Built pipelines by kernel key.
#[derive(Debug)]
pub struct PipelineTable<P> {
    built: Mutex<HashMap<KernelKey, Arc<P>>>,
}

impl<P> Default for PipelineTable<P> {
    fn default() -> Self {
        PipelineTable { built: Mutex::new(HashMap::new()) }
    }
}

impl<P> PipelineTable<P> {
    /// The pipeline of `key`, built now by `build` if it is not in the table. The table stays
    /// locked while `build` runs, so each pipeline is built once.
    pub fn get_or_build<E>(&self, key: KernelKey, build: impl FnOnce() -> Result<P, E>) -> Result<Arc<P>, E> {
        let mut built = lock(&self.built);
        if let Some(p) = built.get(&key) {
            return Ok(p.clone());
        }
        let p = Arc::new(build()?);
        built.insert(key, p.clone());
        Ok(p)
    }

    /// The pipeline of `key`, if it was built.
    pub fn get(&self, key: KernelKey) -> Option<Arc<P>> {
        lock(&self.built).get(&key).cloned()
    }

    /// Adds a pipeline built without holding the table (an async build).
    pub fn insert(&self, key: KernelKey, pipeline: P) {
        lock(&self.built).insert(key, Arc::new(pipeline));
    }

    /// Number of pipelines built so far.
    pub fn len(&self) -> usize {
        lock(&self.built).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_key_is_built_once_and_failures_are_not_kept() {
        let table = PipelineTable::<u32>::default();
        let key = crate::keys()[0];
        assert!(table.get_or_build(key, || Err::<u32, _>("refused")).is_err());
        assert!(table.is_empty() && table.get(key).is_none());
        assert_eq!(*table.get_or_build(key, || Ok::<_, ()>(7)).unwrap(), 7);
        assert_eq!(*table.get_or_build(key, || Err("not called")).unwrap(), 7);
        assert_eq!(table.len(), 1);
        assert_eq!(table.get(key).as_deref(), Some(&7));
    }
}
