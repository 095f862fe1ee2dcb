//! Reading a stored model whose parameters were laid out differently.
//!
//! Why it exists: models are postcard blobs, written field after field with no names,
//! and every family's model starts with a small header (its encoding version, and for
//! some the variant) followed by its parameters. When the parameters' layout changes
//! (a field added, or one that was never a parameter taken out, as `threads` was), a
//! blob of the older version is the current one with other parameter bytes: read the
//! header and the old parameters, convert them, write them in the current layout and
//! append the rest of the blob unchanged. Each family keeps its old parameter structs;
//! this does the splice once.

use serde::{de::DeserializeOwned, Serialize};

/// `bytes` (a `(header, old parameters, rest...)` blob) with the header and parameters
/// replaced by `convert`'s, the rest appended as it was.
pub fn with_params_converted<H, Old, New>(bytes: &[u8], convert: impl FnOnce(H, Old) -> (H, New)) -> Result<Vec<u8>, postcard::Error>
where
    H: Serialize + DeserializeOwned,
    Old: DeserializeOwned,
    New: Serialize,
{
    let ((header, old), rest) = postcard::take_from_bytes::<(H, Old)>(bytes)?;
    let mut out = postcard::to_allocvec(&convert(header, old))?;
    out.extend_from_slice(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Serialize, Deserialize)]
    struct Old {
        a: u32,
        threads: usize,
        b: f64,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct New {
        a: u32,
        b: f64,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Model {
        version: u32,
        params: New,
        rest: Vec<u16>,
    }

    #[test]
    fn the_parameters_are_converted_and_the_rest_kept() {
        let old = postcard::to_allocvec(&(1u32, Old { a: 7, threads: 4, b: 0.5 }, vec![3u16, 300])).unwrap();
        let upgraded = with_params_converted(&old, |_v: u32, p: Old| (2u32, New { a: p.a, b: p.b })).unwrap();
        let m: Model = postcard::from_bytes(&upgraded).unwrap();
        assert_eq!(m, Model { version: 2, params: New { a: 7, b: 0.5 }, rest: vec![3, 300] });
        assert!(with_params_converted(&old[..3], |v: u32, p: Old| (v, New { a: p.a, b: p.b })).is_err(), "a cut blob is an error");
    }
}
