//! [`Supervision`]: which of the folder's two families a fit, its data and its model
//! are, HPC (labels on a tree) or PCM (latent topics under the root).
//!
//! Why it exists: HPC and PCM are one implementation, and the few places where they
//! differ (roles, the tree, the labels' likelihood, η's start, the served labels) match
//! on this instead of reading a bare `bool`. It names nothing, so every module of the
//! folder can name it without an import circle.

use serde::{Deserialize, Serialize};

/// Whether the topics are observed labels on a tree (HPC) or latent topics under the
/// root with every one active in every document (PCM).
///
/// Stored in [`super::model::HpcModel`]'s header where a `bool` (`supervised`) was:
/// postcard writes a unit variant as its index, so the variants' order is that bool's
/// encoding (`Unsupervised` the byte 0, `false`; `Labelled` the byte 1, `true`) and must
/// not change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Supervision {
    /// PCM (`"pcm"`): K latent topics under the root, no labels.
    Unsupervised,
    /// HPC (`"hpc"`): each topic is a label of the uploaded tree, observed on the
    /// labelled documents.
    Labelled,
}

impl Supervision {
    /// The wire name of the family: `"hpc"` or `"pcm"`.
    pub fn family_name(self) -> &'static str {
        match self {
            Supervision::Labelled => "hpc",
            Supervision::Unsupervised => "pcm",
        }
    }

    /// Whether the topics are labels (HPC), for the places that only switch a label
    /// term or a label output on or off.
    pub fn is_labelled(self) -> bool {
        self == Supervision::Labelled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stored bytes are those of the bool the enum replaced, both ways.
    #[test]
    fn encodes_as_the_bool_it_replaced() {
        for (s, b) in [(Supervision::Unsupervised, false), (Supervision::Labelled, true)] {
            assert_eq!(postcard::to_allocvec(&s).unwrap(), postcard::to_allocvec(&b).unwrap());
            assert_eq!(postcard::from_bytes::<Supervision>(&postcard::to_allocvec(&b).unwrap()).unwrap(), s);
            assert_eq!(s.is_labelled(), b);
        }
        assert!(postcard::from_bytes::<Supervision>(&[2]).is_err(), "no third value, as no third bool");
    }
}
