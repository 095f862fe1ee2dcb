//! A checkpoint state's encoding for big buffers: a postcard header, then sections of
//! raw little-endian numbers.
//!
//! Why it exists: serde writes a `Vec<f64>` element by element through the serializer,
//! which for HPC on a 30 000-document corpus (hundreds of megabytes of log rates,
//! affinities, Hessians and posterior sums) cost more than a second per checkpoint. A
//! section here is its length (`u64`) and its values' little-endian bytes, written and
//! read in one pass over a buffer reserved once. Reading checks every length against
//! what is left, so bad bytes are an error, never a panic or a huge allocation.

use serde::{de::DeserializeOwned, Serialize};

/// Appends a header and sections to a buffer.
pub struct StateWriter {
    out: Vec<u8>,
}

impl StateWriter {
    /// A writer whose buffer holds `capacity` bytes before it grows (the caller's
    /// estimate of the whole state, so the big sections never reallocate).
    pub fn with_capacity(capacity: usize) -> Self {
        StateWriter { out: Vec::with_capacity(capacity) }
    }

    /// Bytes a section of `values` numbers takes.
    pub fn section_len(values: usize) -> usize {
        8 + 8 * values
    }

    /// A postcard-encoded value (self-delimiting: read back by [`StateReader::header`]).
    pub fn header<T: Serialize>(&mut self, value: &T) {
        self.out = postcard::to_extend(value, std::mem::take(&mut self.out)).expect("plain data encodes");
    }

    /// A section of numbers.
    pub fn f64s(&mut self, values: &[f64]) {
        self.len(values.len());
        let start = self.out.len();
        self.out.resize(start + 8 * values.len(), 0);
        for (bytes, x) in self.out[start..].chunks_exact_mut(8).zip(values) {
            bytes.copy_from_slice(&x.to_le_bytes());
        }
    }

    /// A section of numbers from `rows`, concatenated, after a section of their lengths:
    /// a ragged array.
    pub fn ragged<R: AsRef<[f64]>>(&mut self, rows: &[R]) {
        self.len(rows.len());
        for row in rows {
            self.len(row.as_ref().len());
        }
        let total = rows.iter().map(|r| r.as_ref().len()).sum::<usize>();
        self.len(total);
        let start = self.out.len();
        self.out.resize(start + 8 * total, 0);
        let mut chunks = self.out[start..].chunks_exact_mut(8);
        for x in rows.iter().flat_map(|r| r.as_ref()) {
            chunks.next().expect("sized to the rows").copy_from_slice(&x.to_le_bytes());
        }
    }

    /// Bytes a [`StateWriter::ragged`] section of `rows` with `values` numbers in all takes.
    pub fn ragged_len(rows: usize, values: usize) -> usize {
        8 + 8 * rows + Self::section_len(values)
    }

    fn len(&mut self, n: usize) {
        self.out.extend_from_slice(&(n as u64).to_le_bytes());
    }

    pub fn finish(self) -> Vec<u8> {
        self.out
    }
}

/// Why bytes are not the layout a [`StateReader`] or [`split_tail`] expects: cut short,
/// a length past the end, a header that does not decode, bytes left over.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("header does not decode: {0}")]
    Header(String),
    #[error("a section's length is cut short")]
    LengthCutShort,
    #[error("a section of {len} is longer than the {left} bytes left")]
    SectionPastEnd { len: u64, left: usize },
    #[error("a section of {values} numbers is longer than the {left} bytes left")]
    ValuesPastEnd { values: usize, left: usize },
    #[error("a ragged section's rows do not add up to its {total} values")]
    RaggedRows { total: usize },
    #[error("{0} bytes are left after the last section")]
    LeftOver(usize),
    #[error("shorter than its tail's length")]
    TailLengthCutShort,
    #[error("its tail is longer than it")]
    TailPastStart,
}

/// Reads back what a [`StateWriter`] wrote, in the same order.
pub struct StateReader<'a> {
    rest: &'a [u8],
}

impl<'a> StateReader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        StateReader { rest: bytes }
    }

    pub fn header<T: DeserializeOwned>(&mut self) -> Result<T, LayoutError> {
        let (value, rest) = postcard::take_from_bytes(self.rest).map_err(|e| LayoutError::Header(e.to_string()))?;
        self.rest = rest;
        Ok(value)
    }

    pub fn f64s(&mut self) -> Result<Vec<f64>, LayoutError> {
        let n = self.len()?;
        self.values(n)
    }

    pub fn ragged(&mut self) -> Result<Vec<Vec<f64>>, LayoutError> {
        let rows = self.len()?;
        let lens = (0..rows).map(|_| self.len()).collect::<Result<Vec<_>, _>>()?;
        let total = self.len()?;
        if lens.iter().try_fold(0usize, |a, &l| a.checked_add(l)) != Some(total) {
            return Err(LayoutError::RaggedRows { total });
        }
        let values = self.values(total)?;
        let mut at = 0;
        Ok(lens
            .into_iter()
            .map(|l| {
                at += l;
                values[at - l..at].to_vec()
            })
            .collect())
    }

    /// Fails unless every byte was read.
    pub fn finish(self) -> Result<(), LayoutError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(LayoutError::LeftOver(self.rest.len()))
        }
    }

    fn len(&mut self) -> Result<usize, LayoutError> {
        let (bytes, rest) = self.rest.split_first_chunk::<8>().ok_or(LayoutError::LengthCutShort)?;
        self.rest = rest;
        let n = u64::from_le_bytes(*bytes);
        // No section is longer than the bytes left (checked before allocating).
        usize::try_from(n).ok().filter(|&n| n <= self.rest.len()).ok_or(LayoutError::SectionPastEnd { len: n, left: self.rest.len() })
    }

    fn values(&mut self, n: usize) -> Result<Vec<f64>, LayoutError> {
        let bytes = n.checked_mul(8).filter(|&b| b <= self.rest.len()).ok_or(LayoutError::ValuesPastEnd { values: n, left: self.rest.len() })?;
        let (head, rest) = self.rest.split_at(bytes);
        self.rest = rest;
        Ok(head.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().expect("8 bytes"))).collect())
    }
}

/// Append `tail` (postcard) and its length (`u32`, little-endian) to `bytes`, which are
/// neither copied nor re-encoded: how a checkpoint's driver trailer follows the family's
/// state, and HPC's refit calibration follows its chain's state.
pub fn append_tail<T: Serialize>(bytes: Vec<u8>, tail: &T) -> Vec<u8> {
    let start = bytes.len();
    let mut bytes = postcard::to_extend(tail, bytes).expect("plain data encodes");
    let len = u32::try_from(bytes.len() - start).expect("a tail far below 4 GiB");
    bytes.extend_from_slice(&len.to_le_bytes());
    bytes
}

/// Split what [`append_tail`] wrote into the bytes before the tail and the tail's own
/// bytes (still to be decoded).
pub fn split_tail(bytes: &[u8]) -> Result<(&[u8], &[u8]), LayoutError> {
    let (rest, len) = bytes.split_last_chunk::<4>().ok_or(LayoutError::TailLengthCutShort)?;
    let split = rest.len().checked_sub(u32::from_le_bytes(*len) as usize).ok_or(LayoutError::TailPastStart)?;
    Ok(rest.split_at(split))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_read_back_as_written() {
        let rows = vec![vec![1.5, -2.0], vec![], vec![f64::MIN_POSITIVE, 3.0, f64::NAN]];
        let mut w = StateWriter::with_capacity(0);
        w.header(&(7u32, "x".to_string()));
        w.f64s(&[0.25, -0.0, 1e300]);
        w.ragged(&rows);
        let bytes = w.finish();
        let mut r = StateReader::new(&bytes);
        assert_eq!(r.header::<(u32, String)>().unwrap(), (7, "x".to_string()));
        let xs = r.f64s().unwrap();
        assert_eq!(xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), [0.25f64, -0.0, 1e300].map(f64::to_bits));
        let back = r.ragged().unwrap();
        assert_eq!(
            back.iter().map(|r| r.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>(),
            rows.iter().map(|r| r.iter().map(|x| x.to_bits()).collect::<Vec<_>>()).collect::<Vec<_>>()
        );
        r.finish().unwrap();
        assert_eq!(bytes.len(), postcard::to_allocvec(&(7u32, "x".to_string())).unwrap().len() + StateWriter::section_len(3) + StateWriter::ragged_len(3, 5));
    }

    #[test]
    fn cut_or_padded_bytes_are_errors() {
        let mut w = StateWriter::with_capacity(0);
        w.f64s(&[1.0, 2.0]);
        w.ragged(&[vec![3.0], vec![4.0, 5.0]]);
        let bytes = w.finish();
        for cut in 0..bytes.len() {
            let mut r = StateReader::new(&bytes[..cut]);
            assert!(r.f64s().and_then(|_| r.ragged()).is_err(), "cut at {cut}");
        }
        let mut padded = bytes.clone();
        padded.push(0);
        let mut r = StateReader::new(&padded);
        r.f64s().unwrap();
        r.ragged().unwrap();
        assert!(r.finish().is_err());
        // A length far beyond the bytes is refused before any allocation.
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(StateReader::new(&huge).f64s().is_err());
    }
}
