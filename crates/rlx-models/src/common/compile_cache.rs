//! [`CompileCache`]: the compiled graphs a model keeps, by shape key, least recently used
//! first. The embedder keys it by (batch, seq), the decoder by (bucket, logit rows) and Mamba
//! by sequence length; each compiled entry holds its own copy of the weights on the device, so
//! the cache is small and the oldest entry is dropped past its size.

use crate::error::{ModelError, Result};

/// Compiled entries `V` by key `K`, most recently used last.
pub struct CompileCache<K, V> {
    entries: Vec<(K, V)>,
    max: usize,
}

impl<K: Copy + PartialEq, V> CompileCache<K, V> {
    /// An empty cache that keeps at most `max` entries (at least one).
    pub fn new(max: usize) -> Self {
        CompileCache { entries: Vec::new(), max: max.max(1) }
    }

    /// The keys cached now, least recently used first.
    pub fn keys(&self) -> Vec<K> {
        self.entries.iter().map(|(k, _)| *k).collect()
    }

    /// Makes `key`'s entry the most recently used; false when it is not cached.
    pub fn promote(&mut self, key: &K) -> bool {
        let Some(pos) = self.entries.iter().position(|(k, _)| k == key) else { return false };
        let entry = self.entries.remove(pos);
        self.entries.push(entry);
        true
    }

    /// Adds `value` as the most recently used entry, first dropping the least recently used
    /// one when the cache is full.
    pub fn insert(&mut self, key: K, value: V) {
        if self.entries.len() >= self.max {
            self.entries.remove(0);
        }
        self.entries.push((key, value));
    }

    /// The most recently used entry.
    pub fn latest(&mut self) -> Result<&mut V> {
        match self.entries.last_mut() {
            Some((_, v)) => Ok(v),
            None => {
                Err(ModelError::InvalidInput { reason: "internal: the compiled-graph cache is empty".into() })
            }
        }
    }

    /// `key`'s entry, made the most recently used: from the cache, or made by `make` (which
    /// compiles it) and added.
    pub fn get_or_insert_with(&mut self, key: K, make: impl FnOnce() -> Result<V>) -> Result<&mut V> {
        if !self.promote(&key) {
            let value = make()?;
            self.insert(key, value);
        }
        self.latest()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn drops_the_least_recently_used_past_its_size() {
        let mut c = CompileCache::new(2);
        let mut made = 0;
        for key in [1, 2, 1, 3, 2] {
            c.get_or_insert_with(key, || {
                made += 1;
                Ok(key * 10)
            })
            .unwrap();
        }
        // 1 and 2 compiled, 1 reused, 3 evicts 2, 2 evicts 1.
        assert_eq!((c.keys(), made), (vec![3, 2], 4));
        assert_eq!(*c.latest().unwrap(), 20);
        let mut zero: CompileCache<u8, ()> = CompileCache::new(0);
        zero.insert(1, ());
        zero.insert(2, ());
        assert_eq!(zero.keys(), vec![2]);
    }
}
