//! A model family's name as jobs and models store it, typed.
//!
//! Why it exists: a job row and a model row keep their family as text (`lda`,
//! `hdp_ammsb`, ...), and every reader used to look that text up in the registry on its
//! own. A [`FamilyName`] is built only by parsing against
//! `topicd_core::models::registry`, at submit and when a row is read back, so a value
//! of it always names a registered family and hands that family over
//! ([`FamilyName::family`]). Adding a family stays one folder and one registry line:
//! nothing here lists families. A stored name this build does not register (a family
//! removed since the row was written) reads back as an [`UnknownFamily`], which
//! readers report as an error of their own; it never fails the whole read (a job list
//! stays readable) and never panics.

use topicd_core::models::registry::{self, Family};

/// A registered family's wire and stored name.
#[derive(Clone, Copy)]
pub struct FamilyName(Family);

impl FamilyName {
    /// The registered family named `name`; an [`UnknownFamily`] otherwise.
    pub fn parse(name: &str) -> Result<FamilyName, UnknownFamily> {
        registry::lookup(name).map(FamilyName).ok_or_else(|| UnknownFamily { name: name.to_string() })
    }

    /// The name as stored and shown.
    pub fn as_str(self) -> &'static str {
        self.0.name()
    }

    /// The registered family it names.
    pub fn family(self) -> Family {
        self.0
    }
}

impl PartialEq for FamilyName {
    fn eq(&self, other: &FamilyName) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for FamilyName {}

impl std::fmt::Debug for FamilyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FamilyName({:?})", self.as_str())
    }
}

impl std::fmt::Display for FamilyName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A family name the registry does not know: given by a caller, or stored by a build
/// that had the family.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown model {name:?}")]
pub struct UnknownFamily {
    /// The name as given or stored.
    pub name: String,
}

/// A family column read back: the family, or the name no registered family has.
pub type StoredFamily = Result<FamilyName, UnknownFamily>;

/// The text of a stored family column, registered or not (for listings and messages).
pub fn stored_name(family: &StoredFamily) -> &str {
    match family {
        Ok(f) => f.as_str(),
        Err(unknown) => &unknown.name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_name_parses_back_to_itself_and_others_are_unknown() {
        for name in registry::names() {
            let parsed = FamilyName::parse(name).expect("a registered name parses");
            assert_eq!(parsed.as_str(), name);
            assert_eq!(parsed.family().name(), name);
            assert_eq!(stored_name(&Ok(parsed)), name);
        }
        let gone = FamilyName::parse("gone").unwrap_err();
        assert_eq!(gone, UnknownFamily { name: "gone".into() });
        assert_eq!(gone.to_string(), "unknown model \"gone\"");
        assert_eq!(stored_name(&Err(gone)), "gone");
    }
}
