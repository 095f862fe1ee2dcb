//! Bytes a decoded model holds on the heap.
//!
//! Why it exists: the server keeps decoded models in memory under a byte budget
//! (`--model-cache-mb`), so every model must say how large it is. Counting the heap
//! blocks its vectors and strings hold (capacity × element size) is exact for the flat
//! vectors that carry nearly all of a model's bytes and cheap enough to ask at every
//! use.

use std::collections::HashMap;
use std::mem::size_of;

/// Per-allocation overhead of the allocator (glibc's chunk header, rounded), charged to
/// every heap block so many small strings are not counted as free.
const BLOCK_OVERHEAD: usize = 16;

/// The heap bytes of a vector of plain values (numbers, fixed-size arrays, `Option`s of
/// numbers): its capacity times the element size.
pub fn vec<T>(v: &Vec<T>) -> usize {
    if v.capacity() == 0 {
        0
    } else {
        v.capacity() * size_of::<T>() + BLOCK_OVERHEAD
    }
}

/// The heap bytes of one block of `len` bytes (none for an empty one).
pub fn block(len: usize) -> usize {
    if len == 0 {
        0
    } else {
        len + BLOCK_OVERHEAD
    }
}

/// The heap bytes of one string.
pub fn string(s: &str) -> usize {
    block(s.len())
}

/// The heap bytes of a vector of strings: the vector's block and every string's.
pub fn strings(v: &Vec<String>) -> usize {
    vec(v) + v.iter().map(|s| string(s)).sum::<usize>()
}

/// The heap bytes of a vector whose elements own heap blocks of their own, measured by
/// `each`.
pub fn nested<T>(v: &Vec<T>, each: impl Fn(&T) -> usize) -> usize {
    vec(v) + v.iter().map(each).sum::<usize>()
}

/// The heap bytes of a hash map: its table (keys, values and one control byte per
/// bucket; buckets are the next power of two above 8/7 of the length) and what each key
/// and value holds besides.
pub fn hash_map<K, V>(m: &HashMap<K, V>, each: impl Fn(&K, &V) -> usize) -> usize {
    if m.capacity() == 0 {
        return 0;
    }
    let buckets = (m.capacity() * 8 / 7).next_power_of_two();
    buckets * (size_of::<(K, V)>() + 1) + BLOCK_OVERHEAD + m.iter().map(|(k, v)| each(k, v)).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_capacity_not_length() {
        let mut v: Vec<f64> = Vec::with_capacity(100);
        v.push(1.0);
        assert_eq!(vec(&v), 100 * 8 + BLOCK_OVERHEAD);
        assert_eq!(vec(&Vec::<f64>::new()), 0);
    }

    #[test]
    fn strings_count_every_block() {
        let v = vec!["ab".to_string(), String::new(), "cde".to_string()];
        assert_eq!(strings(&v), vec(&v) + (2 + BLOCK_OVERHEAD) + (3 + BLOCK_OVERHEAD));
    }

    #[test]
    fn a_map_counts_its_table_and_its_strings() {
        let m: HashMap<String, u32> = (0..100).map(|i| (format!("w{i}"), i)).collect();
        let bytes = hash_map(&m, |k, _| string(k));
        let table = (m.capacity() * 8 / 7).next_power_of_two() * (size_of::<(String, u32)>() + 1);
        assert!(bytes > table && bytes < table + 100 * (4 + BLOCK_OVERHEAD) + BLOCK_OVERHEAD + 1, "{bytes} against a table of {table}");
    }
}
