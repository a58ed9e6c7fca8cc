//! Metadata values: every GGUF value type, arrays (nested ones included) kept as typed vectors.

use super::cursor::{le_array, Cursor, OrTruncated};
use super::error::GgufError;
use std::fmt;

/// How deep arrays may nest. GGUF sets no limit; real files nest at most twice. The bound keeps
/// the recursive reader's stack small whatever a file says.
pub const MAX_ARRAY_DEPTH: usize = 16;

/// The type of a metadata value, as GGUF numbers it (`U8` = 0 … `F64` = 12).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GgufValueType {
    /// GGUF's u8 value type.
    U8,
    /// GGUF's i8 value type.
    I8,
    /// GGUF's u16 value type.
    U16,
    /// GGUF's i16 value type.
    I16,
    /// GGUF's u32 value type.
    U32,
    /// GGUF's i32 value type.
    I32,
    /// GGUF's f32 value type.
    F32,
    /// GGUF's bool value type.
    Bool,
    /// GGUF's UTF-8 string value type.
    String,
    /// GGUF's array value type.
    Array,
    /// GGUF's u64 value type.
    U64,
    /// GGUF's i64 value type.
    I64,
    /// GGUF's f64 value type.
    F64,
}

impl GgufValueType {
    /// The type with GGUF id `id`, if there is one.
    pub fn from_id(id: u32) -> Option<Self> {
        use GgufValueType::*;
        [U8, I8, U16, I16, U32, I32, F32, Bool, String, Array, U64, I64, F64]
            .get(usize::try_from(id).ok()?)
            .copied()
    }

    /// Lower-case name: `u8` … `f64`, `bool`, `string`, `array`.
    pub fn name(self) -> &'static str {
        use GgufValueType::*;
        match self {
            U8 => "u8",
            I8 => "i8",
            U16 => "u16",
            I16 => "i16",
            U32 => "u32",
            I32 => "i32",
            F32 => "f32",
            Bool => "bool",
            String => "string",
            Array => "array",
            U64 => "u64",
            I64 => "i64",
            F64 => "f64",
        }
    }

    /// The fewest bytes a value of this type takes in a file (a string's length, an array's
    /// element type and length): what bounds a count before anything is reserved for it.
    fn min_bytes(self) -> usize {
        use GgufValueType::*;
        match self {
            U8 | I8 | Bool => 1,
            U16 | I16 => 2,
            U32 | I32 | F32 => 4,
            U64 | I64 | F64 | String => 8,
            Array => 12,
        }
    }
}

impl fmt::Display for GgufValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One metadata value.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufValue {
    /// A value of type u8.
    U8(u8),
    /// A value of type i8.
    I8(i8),
    /// A value of type u16.
    U16(u16),
    /// A value of type i16.
    I16(i16),
    /// A value of type u32.
    U32(u32),
    /// A value of type i32.
    I32(i32),
    /// A value of type u64.
    U64(u64),
    /// A value of type i64.
    I64(i64),
    /// A value of type f32.
    F32(f32),
    /// A value of type f64.
    F64(f64),
    /// A value of type bool.
    Bool(bool),
    /// A UTF-8 string.
    String(String),
    /// An array (of one element type).
    Array(GgufArray),
}

/// An array value: one vector of its element type.
#[derive(Clone, Debug, PartialEq)]
pub enum GgufArray {
    /// u8 elements.
    U8(Vec<u8>),
    /// i8 elements.
    I8(Vec<i8>),
    /// u16 elements.
    U16(Vec<u16>),
    /// i16 elements.
    I16(Vec<i16>),
    /// u32 elements.
    U32(Vec<u32>),
    /// i32 elements.
    I32(Vec<i32>),
    /// u64 elements.
    U64(Vec<u64>),
    /// i64 elements.
    I64(Vec<i64>),
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// bool elements.
    Bool(Vec<bool>),
    /// UTF-8 string elements.
    String(Vec<String>),
    /// Arrays of arrays.
    Array(Vec<GgufArray>),
}

impl GgufValue {
    /// The value's type.
    pub fn value_type(&self) -> GgufValueType {
        use GgufValue as V;
        match self {
            V::U8(_) => GgufValueType::U8,
            V::I8(_) => GgufValueType::I8,
            V::U16(_) => GgufValueType::U16,
            V::I16(_) => GgufValueType::I16,
            V::U32(_) => GgufValueType::U32,
            V::I32(_) => GgufValueType::I32,
            V::U64(_) => GgufValueType::U64,
            V::I64(_) => GgufValueType::I64,
            V::F32(_) => GgufValueType::F32,
            V::F64(_) => GgufValueType::F64,
            V::Bool(_) => GgufValueType::Bool,
            V::String(_) => GgufValueType::String,
            V::Array(_) => GgufValueType::Array,
        }
    }

    /// The value as an integer, whatever its integer type (`None` for floats, bools, strings
    /// and arrays).
    pub fn as_i128(&self) -> Option<i128> {
        use GgufValue as V;
        Some(match *self {
            V::U8(v) => v.into(),
            V::I8(v) => v.into(),
            V::U16(v) => v.into(),
            V::I16(v) => v.into(),
            V::U32(v) => v.into(),
            V::I32(v) => v.into(),
            V::U64(v) => v.into(),
            V::I64(v) => v.into(),
            _ => return None,
        })
    }

    /// The value as an f64 when it is an f32 or an f64.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            GgufValue::F32(v) => Some(v.into()),
            GgufValue::F64(v) => Some(v),
            _ => None,
        }
    }

    /// The string, when the value is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            GgufValue::String(s) => Some(s),
            _ => None,
        }
    }

    /// The array, when the value is one.
    pub fn as_array(&self) -> Option<&GgufArray> {
        match self {
            GgufValue::Array(a) => Some(a),
            _ => None,
        }
    }

    /// The type and, for scalars and short strings, the value: `u32 4`, `string "llama"`,
    /// `array of 32 string` (for error messages).
    pub fn describe(&self) -> String {
        match self {
            GgufValue::Array(a) => a.describe(),
            GgufValue::String(s) if s.chars().count() > 40 => format!("a string of {} bytes", s.len()),
            GgufValue::String(s) => format!("string {s:?}"),
            GgufValue::Bool(b) => format!("bool {b}"),
            other => match (other.as_i128(), other.as_f64()) {
                (Some(i), _) => format!("{} {i}", other.value_type()),
                (_, Some(f)) => format!("{} {f}", other.value_type()),
                _ => other.value_type().to_string(),
            },
        }
    }
}

impl GgufArray {
    /// Number of elements.
    pub fn len(&self) -> usize {
        use GgufArray as A;
        match self {
            A::U8(v) => v.len(),
            A::I8(v) => v.len(),
            A::U16(v) => v.len(),
            A::I16(v) => v.len(),
            A::U32(v) => v.len(),
            A::I32(v) => v.len(),
            A::U64(v) => v.len(),
            A::I64(v) => v.len(),
            A::F32(v) => v.len(),
            A::F64(v) => v.len(),
            A::Bool(v) => v.len(),
            A::String(v) => v.len(),
            A::Array(v) => v.len(),
        }
    }

    /// Whether the array has no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn elem_type(&self) -> GgufValueType {
        use GgufArray as A;
        match self {
            A::U8(_) => GgufValueType::U8,
            A::I8(_) => GgufValueType::I8,
            A::U16(_) => GgufValueType::U16,
            A::I16(_) => GgufValueType::I16,
            A::U32(_) => GgufValueType::U32,
            A::I32(_) => GgufValueType::I32,
            A::U64(_) => GgufValueType::U64,
            A::I64(_) => GgufValueType::I64,
            A::F32(_) => GgufValueType::F32,
            A::F64(_) => GgufValueType::F64,
            A::Bool(_) => GgufValueType::Bool,
            A::String(_) => GgufValueType::String,
            A::Array(_) => GgufValueType::Array,
        }
    }

    /// `array of N TYPE`.
    pub fn describe(&self) -> String {
        format!("array of {} {}", self.len(), self.elem_type())
    }
}

/// Reads `n` little-endian numbers of type `$t`.
macro_rules! numbers {
    ($cur:expr, $n:expr, $t:ty, $what:expr) => {{
        const SIZE: usize = std::mem::size_of::<$t>();
        let total = u64::try_from($n.saturating_mul(SIZE)).unwrap_or(u64::MAX);
        let bytes = $cur.take(total).or_truncated($what)?;
        bytes.chunks_exact(SIZE).map(|b| <$t>::from_le_bytes(le_array(b))).collect::<Vec<$t>>()
    }};
}

/// Reads one value of type `ty` for metadata key `key`.
pub(super) fn read_value(cur: &mut Cursor<'_>, ty: GgufValueType, key: &str) -> Result<GgufValue, GgufError> {
    use GgufValueType as T;
    let what = || format!("the value of metadata key '{key}'");
    Ok(match ty {
        T::U8 => GgufValue::U8(u8::from_le_bytes(cur.array().or_truncated(what)?)),
        T::I8 => GgufValue::I8(i8::from_le_bytes(cur.array().or_truncated(what)?)),
        T::U16 => GgufValue::U16(u16::from_le_bytes(cur.array().or_truncated(what)?)),
        T::I16 => GgufValue::I16(i16::from_le_bytes(cur.array().or_truncated(what)?)),
        T::U32 => GgufValue::U32(u32::from_le_bytes(cur.array().or_truncated(what)?)),
        T::I32 => GgufValue::I32(i32::from_le_bytes(cur.array().or_truncated(what)?)),
        T::U64 => GgufValue::U64(u64::from_le_bytes(cur.array().or_truncated(what)?)),
        T::I64 => GgufValue::I64(i64::from_le_bytes(cur.array().or_truncated(what)?)),
        T::F32 => GgufValue::F32(f32::from_le_bytes(cur.array().or_truncated(what)?)),
        T::F64 => GgufValue::F64(f64::from_le_bytes(cur.array().or_truncated(what)?)),
        T::Bool => {
            let [byte] = cur.array().or_truncated(what)?;
            GgufValue::Bool(bool_of(byte, key)?)
        }
        T::String => GgufValue::String(cur.string(what)?),
        T::Array => GgufValue::Array(read_array(cur, key, 1)?),
    })
}

fn bool_of(byte: u8, key: &str) -> Result<bool, GgufError> {
    match byte {
        0 => Ok(false),
        1 => Ok(true),
        byte => Err(GgufError::Bool { key: key.to_string(), byte }),
    }
}

/// Reads an array (element type, length, elements) at nesting depth `depth` (1 = outermost).
fn read_array(cur: &mut Cursor<'_>, key: &str, depth: usize) -> Result<GgufArray, GgufError> {
    use GgufValueType as T;
    if depth > MAX_ARRAY_DEPTH {
        return Err(GgufError::TooDeep { key: key.to_string(), max: MAX_ARRAY_DEPTH });
    }
    let what = || format!("the array of metadata key '{key}'");
    let id = cur.u32().or_truncated(|| format!("the element type of {}", what()))?;
    let ty = T::from_id(id).ok_or_else(|| GgufError::ValueType { key: key.to_string(), id })?;
    let count = cur.u64().or_truncated(|| format!("the length of {}", what()))?;
    let n = cur.count(count, ty.min_bytes(), || format!("the {ty} array of metadata key '{key}'"))?;
    Ok(match ty {
        T::U8 => GgufArray::U8(numbers!(cur, n, u8, what)),
        T::I8 => GgufArray::I8(numbers!(cur, n, i8, what)),
        T::U16 => GgufArray::U16(numbers!(cur, n, u16, what)),
        T::I16 => GgufArray::I16(numbers!(cur, n, i16, what)),
        T::U32 => GgufArray::U32(numbers!(cur, n, u32, what)),
        T::I32 => GgufArray::I32(numbers!(cur, n, i32, what)),
        T::U64 => GgufArray::U64(numbers!(cur, n, u64, what)),
        T::I64 => GgufArray::I64(numbers!(cur, n, i64, what)),
        T::F32 => GgufArray::F32(numbers!(cur, n, f32, what)),
        T::F64 => GgufArray::F64(numbers!(cur, n, f64, what)),
        T::Bool => {
            let bytes = numbers!(cur, n, u8, what);
            GgufArray::Bool(bytes.into_iter().map(|b| bool_of(b, key)).collect::<Result<_, _>>()?)
        }
        T::String => {
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                v.push(cur.string(|| format!("string {i} of metadata key '{key}'"))?);
            }
            GgufArray::String(v)
        }
        T::Array => {
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(read_array(cur, key, depth + 1)?);
            }
            GgufArray::Array(v)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn array(elem: u32, n: u64, body: &[u8]) -> Vec<u8> {
        let mut b = elem.to_le_bytes().to_vec();
        b.extend_from_slice(&n.to_le_bytes());
        b.extend_from_slice(body);
        b
    }

    #[test]
    fn scalars_and_arrays_read_back() {
        let v = read_value(&mut Cursor::new(&(-5i16).to_le_bytes()), GgufValueType::I16, "k").unwrap();
        assert_eq!((v.clone(), v.as_i128(), v.describe()), (GgufValue::I16(-5), Some(-5), "i16 -5".into()));
        let b = array(4, 2, &[1, 0, 0, 0, 2, 0, 0, 0]);
        let v = read_value(&mut Cursor::new(&b), GgufValueType::Array, "k").unwrap();
        assert_eq!(v, GgufValue::Array(GgufArray::U32(vec![1, 2])));
        assert_eq!(v.describe(), "array of 2 u32");
    }

    #[test]
    fn nested_arrays_stop_at_the_depth_limit() {
        // Arrays of one array each, 17 deep, ending in an empty u8 array.
        let mut b = array(0, 0, &[]);
        for _ in 0..MAX_ARRAY_DEPTH {
            b = array(9, 1, &b);
        }
        let e = read_value(&mut Cursor::new(&b), GgufValueType::Array, "k").unwrap_err();
        assert_eq!(e, GgufError::TooDeep { key: "k".into(), max: MAX_ARRAY_DEPTH });
        let inner = &b[12..];
        assert!(read_value(&mut Cursor::new(inner), GgufValueType::Array, "k").is_ok());
    }

    #[test]
    fn bad_bytes_are_named() {
        let e = read_value(&mut Cursor::new(&[2]), GgufValueType::Bool, "k").unwrap_err();
        assert_eq!(e, GgufError::Bool { key: "k".into(), byte: 2 });
        let e = read_value(&mut Cursor::new(&array(13, 0, &[])), GgufValueType::Array, "k").unwrap_err();
        assert_eq!(e, GgufError::ValueType { key: "k".into(), id: 13 });
        let e = read_value(&mut Cursor::new(&array(8, 1 << 60, &[0; 64])), GgufValueType::Array, "k")
            .unwrap_err();
        assert!(matches!(e, GgufError::TooMany { count, max: 8, .. } if count == 1 << 60), "{e}");
    }
}
