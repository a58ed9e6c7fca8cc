//! Reads fuzz input as a stream of small decisions. Past the end every read gives zero, so any
//! input decodes to something and decoding never fails.

/// Largest dimension a decoded shape has.
pub const MAX_DIM: usize = 64;
/// Largest element count a decoded shape has.
pub const MAX_ELEMS: usize = 1 << 16;

/// f32 values worth trying as attributes (eps, scales, pad values): the edges first.
const FLOATS: [f32; 12] = [
    0.0,
    1.0,
    -1.0,
    0.5,
    1e-5,
    1e-12,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    f32::MAX,
    f32::MIN_POSITIVE,
    -0.0,
];

pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.data.len()
    }

    /// The bytes not read yet.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }

    pub fn u8(&mut self) -> u8 {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos = self.pos.saturating_add(1);
        b
    }

    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    /// A value in `0..n` (`0` when `n == 0`); `n` is at most 256 for an even spread.
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::from(self.u8()) % n
        }
    }

    /// One of `xs` (`None` when empty).
    pub fn pick<T: Clone>(&mut self, xs: &[T]) -> Option<T> {
        let i = self.below(xs.len());
        xs.get(i).cloned()
    }

    /// A small count or size: mostly `0..=MAX_DIM`, sometimes a value past every limit.
    pub fn size(&mut self) -> usize {
        match self.u8() {
            255 => usize::MAX,
            254 => 1 << 20,
            b => usize::from(b) % (MAX_DIM + 1),
        }
    }

    /// An axis in `-5..=5` (negative counts from the end).
    pub fn axis(&mut self) -> isize {
        (self.below(11) as isize) - 5
    }

    /// An f32: one of the edge values, or raw bits.
    pub fn f32(&mut self) -> f32 {
        let b = self.u8();
        match FLOATS.get(usize::from(b)) {
            Some(&x) => x,
            None if b < 128 => f32::from(b) / 16.0,
            None => f32::from_bits(self.u32()),
        }
    }

    /// A shape of rank 0..=4, each dim in `0..=MAX_DIM`, at most [`MAX_ELEMS`] elements.
    pub fn dims(&mut self) -> Vec<usize> {
        let rank = self.below(5);
        let mut dims: Vec<usize> = (0..rank).map(|_| self.below(MAX_DIM + 1)).collect();
        clamp_elems(&mut dims);
        dims
    }
}

/// Replaces dims by 1 from the front until the element count is at most [`MAX_ELEMS`].
pub fn clamp_elems(dims: &mut [usize]) {
    for i in 0..dims.len() {
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
        if n.is_some_and(|n| n <= MAX_ELEMS) {
            return;
        }
        if let Some(d) = dims.get_mut(i) {
            *d = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_past_the_end_as_zero() {
        let mut r = Reader::new(&[7]);
        assert_eq!(r.u8(), 7);
        assert!(r.is_empty());
        assert_eq!(r.u32(), 0);
        assert_eq!(r.below(0), 0);
        assert!(r.rest().is_empty());
    }

    #[test]
    fn clamps_element_count() {
        let mut d = vec![64, 64, 64, 64];
        clamp_elems(&mut d);
        assert_eq!(d, vec![1, 1, 64, 64]);
        let mut r = Reader::new(&[4, 64, 64, 64, 64]);
        let dims = r.dims();
        assert!(dims.iter().product::<usize>() <= MAX_ELEMS);
    }
}
