//! [`Covariance`]: which of the folder's two families a fit, its state and its model
//! are, DCNT (a full square-root correlation A) or SCNT (a diagonal A).
//!
//! Why it exists: DCNT and SCNT are one implementation, and the places where they
//! differ (A's prior and conditional, λ_A's conditional, the check of a restored A)
//! match on this instead of reading a bare `bool`. It names nothing, so every module of
//! the folder can name it without an import circle.

use serde::{Deserialize, Serialize};

/// The form of A, the square root of the topics' correlation (v_d ~ N(A u_d, λ_v⁻¹ I)):
/// full, so that topics covary (DCNT), or diagonal, so that they do not (SCNT).
///
/// Stored in [`super::model::DcntModel`]'s header where a `bool` (`diagonal`) was:
/// postcard writes a unit variant as its index, so the variants' order is that bool's
/// encoding (`Full` the byte 0, `false`; `Diagonal` the byte 1, `true`) and must not
/// change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Covariance {
    /// DCNT (`"dcnt"`): every entry of A, row k with prior precision k λ_A.
    Full,
    /// SCNT (`"scnt"`): only A's diagonal, the off-diagonal entries held at 0.
    Diagonal,
}

impl Covariance {
    /// The wire name of the family: `"dcnt"` or `"scnt"`.
    pub fn family_name(self) -> &'static str {
        match self {
            Covariance::Full => "dcnt",
            Covariance::Diagonal => "scnt",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored bytes are those of the bool the enum replaced, both ways.
    #[test]
    fn encodes_as_the_bool_it_replaced() {
        for (c, b) in [(Covariance::Full, false), (Covariance::Diagonal, true)] {
            assert_eq!(postcard::to_allocvec(&c).unwrap(), postcard::to_allocvec(&b).unwrap());
            assert_eq!(postcard::from_bytes::<Covariance>(&postcard::to_allocvec(&b).unwrap()).unwrap(), c);
        }
        assert!(postcard::from_bytes::<Covariance>(&[2]).is_err(), "no third value, as no third bool");
    }
}
