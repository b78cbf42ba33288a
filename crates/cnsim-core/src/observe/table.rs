//! Result tables: named columns of numbers or names, as the engine hands them to its callers.

use serde_json::Value;

/// One column of a result table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    U32(Vec<u32>),
    U64(Vec<u64>),
    F64(Vec<f64>),
    Str(Vec<String>),
    /// Each of `values` repeated `each` times in a row: the time column of a time-major table
    /// whose every sample has the same `each` rows (the RP rates of flows `0..each`), handed over
    /// without being written out (with CM on, the largest column of the default observation).
    F64Each {
        values: Vec<f64>,
        each: usize,
    },
    /// `0, 1, …, n − 1`, `times` times over: the id column of such a table.
    U32Cycle {
        n: u32,
        times: usize,
    },
}

/// Writes `v`'s little-endian bytes into `out` (`out.len() == v.len() * W`; the loop compiles to a
/// plain copy).
fn put<const W: usize, T: Copy>(out: &mut [u8], v: impl Iterator<Item = T>, le: impl Fn(T) -> [u8; W]) {
    for (dst, x) in out.chunks_exact_mut(W).zip(v) {
        dst.copy_from_slice(&le(x));
    }
}

impl Column {
    pub fn len(&self) -> usize {
        match self {
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::Str(v) => v.len(),
            Column::F64Each { values, each } => values.len() * each,
            Column::U32Cycle { n, times } => *n as usize * times,
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The values of an `F64` column (`None` for another type, and for a compact column:
    /// [`Self::plain`] writes one out).
    pub fn as_f64(&self) -> Option<&[f64]> {
        match self {
            Column::F64(v) => Some(v),
            _ => None,
        }
    }
    /// The same rows as a `U32`, `U64`, `F64` or `Str` column (the compact forms written out).
    pub fn plain(&self) -> Column {
        match self {
            Column::F64Each { values, each } => Column::F64(values.iter().flat_map(|&t| std::iter::repeat_n(t, *each)).collect()),
            Column::U32Cycle { n, times } => Column::U32((0..*times).flat_map(|_| 0..*n).collect()),
            c => c.clone(),
        }
    }
    /// NumPy type string and width in bytes of a numeric column (`None` for names).
    pub fn dtype(&self) -> Option<(&'static str, usize)> {
        match self {
            Column::U32(_) | Column::U32Cycle { .. } => Some(("<u4", 4)),
            Column::U64(_) => Some(("<u8", 8)),
            Column::F64(_) | Column::F64Each { .. } => Some(("<f8", 8)),
            Column::Str(_) => None,
        }
    }
    /// Writes a numeric column's rows as little-endian bytes into `out`, which holds exactly
    /// `len() × width` bytes ([`Self::dtype`]); names write nothing.
    pub fn write_le(&self, out: &mut [u8]) {
        debug_assert_eq!(out.len(), self.len() * self.dtype().map_or(0, |d| d.1));
        match self {
            Column::U32(v) => put(out, v.iter().copied(), u32::to_le_bytes),
            Column::U64(v) => put(out, v.iter().copied(), u64::to_le_bytes),
            Column::F64(v) => put(out, v.iter().copied(), f64::to_le_bytes),
            Column::Str(_) => {}
            Column::F64Each { each: 0, .. } | Column::U32Cycle { n: 0, .. } => {}
            Column::F64Each { values, each } => {
                for (dst, t) in out.chunks_exact_mut(8 * each).zip(values) {
                    put(dst, std::iter::repeat_n(*t, *each), f64::to_le_bytes);
                }
            }
            Column::U32Cycle { n, .. } => {
                for dst in out.chunks_exact_mut(4 * *n as usize) {
                    put(dst, 0..*n, u32::to_le_bytes);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Column;

    /// The compact columns have the rows, and the bytes, of the plain columns they stand for.
    #[test]
    fn compact_columns_stand_for_their_rows() {
        let t = Column::F64Each { values: vec![0.5, 1.5, 2.5], each: 4 };
        let id = Column::U32Cycle { n: 4, times: 3 };
        let plain_t: Vec<f64> = [0.5; 4].into_iter().chain([1.5; 4]).chain([2.5; 4]).collect();
        let plain_id: Vec<u32> = (0..3).flat_map(|_| 0..4).collect();
        assert_eq!(t.plain(), Column::F64(plain_t.clone()));
        assert_eq!(id.plain(), Column::U32(plain_id.clone()));
        assert_eq!((t.len(), id.len()), (12, 12));
        for (c, plain) in [(t, Column::F64(plain_t)), (id, Column::U32(plain_id))] {
            let w = c.dtype().unwrap().1;
            assert_eq!(c.dtype(), plain.dtype());
            let (mut a, mut b) = (vec![0u8; c.len() * w], vec![0u8; c.len() * w]);
            c.write_le(&mut a);
            plain.write_le(&mut b);
            assert_eq!(a, b);
        }
        // no sample, or no flow: no rows
        for c in [Column::F64Each { values: vec![], each: 4 }, Column::F64Each { values: vec![1.0], each: 0 }, Column::U32Cycle { n: 0, times: 5 }] {
            assert!(c.is_empty() && c.plain().is_empty());
            c.write_le(&mut []);
        }
    }
}

/// A named table of equally long columns.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

/// Everything a run produces.
#[derive(Debug, Clone)]
pub struct Results {
    pub summary: Value,
    pub tables: Vec<Table>,
}

impl Results {
    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }
    /// Column `column` of table `table` as f64 values, if both exist and the column is `F64`.
    pub fn f64_column(&self, table: &str, column: &str) -> Option<&[f64]> {
        self.table(table)?.columns.iter().find(|(n, _)| *n == column)?.1.as_f64()
    }
}
