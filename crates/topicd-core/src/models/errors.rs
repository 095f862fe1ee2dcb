//! Why a fit, an evaluation or a stored model's reading failed, in the terms the caller
//! acts on ([`FitError`], its [`FailureKind`], [`ModelError`]).
//!
//! Why it exists: the runner records the failure class on the job and in `/metrics`, and
//! the HTTP edge maps each error once; neither should parse messages.

use super::state_bytes::LayoutError;
use super::ParamError;

/// Why a fit or an evaluation stopped without a result, in the terms its caller acts
/// on: the user fixes an invalid input, retries a store fault, and reports an internal
/// error; [`FitError::kind`] names which, for the job record and `/metrics`. Each
/// variant's payload ([`super::causes`]) says what went wrong in fields.
#[derive(Debug, thiserror::Error)]
pub enum FitError {
    /// Stopped on request (a cancel, a shutdown, a lost lease).
    #[error("cancelled")]
    Cancelled,
    /// A parameter is out of its range for this input.
    #[error(transparent)]
    Params(#[from] ParamError),
    /// The input cannot be fitted as asked: a labelled model on an unlabelled corpus, too
    /// few documents, an input deleted before the job ran. The user's to fix.
    #[error("{0}")]
    InvalidInput(super::causes::InvalidInput),
    /// The store could not be read or written. Retrying the job may succeed.
    #[error("{0}")]
    Store(super::causes::StoreFault),
    /// The sampler or the objective reached a non-finite value.
    #[error("{0}")]
    Numerical(super::causes::NonFinite),
    /// A bug or a corrupt stored blob: a panic, a state the code should never reach.
    #[error("{0}")]
    Internal(super::causes::Internal),
    /// The fit's processes ended before it did (a rank of a distributed fit died, a
    /// host was lost): retrying resumes from its last checkpoint.
    #[error("{0}")]
    Interrupted(super::causes::Interruption),
}

/// The class of a failed job, as the job record and `/metrics` name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    InvalidInput,
    StoreFault,
    Interrupted,
    Numerical,
    Internal,
}

impl FailureKind {
    pub const ALL: [FailureKind; 5] =
        [FailureKind::InvalidInput, FailureKind::StoreFault, FailureKind::Interrupted, FailureKind::Numerical, FailureKind::Internal];

    /// The wire name (`failure` on a job, the `kind` label in `/metrics`).
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::InvalidInput => "invalid-input",
            FailureKind::StoreFault => "store-fault",
            FailureKind::Interrupted => "interrupted",
            FailureKind::Numerical => "numerical",
            FailureKind::Internal => "internal",
        }
    }

    pub fn parse(s: &str) -> Option<FailureKind> {
        FailureKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl FitError {
    /// The class of this failure.
    pub fn kind(&self) -> FailureKind {
        match self {
            FitError::Cancelled | FitError::Interrupted(_) => FailureKind::Interrupted,
            FitError::Params(_) | FitError::InvalidInput(_) => FailureKind::InvalidInput,
            FitError::Store(_) => FailureKind::StoreFault,
            FitError::Numerical(_) => FailureKind::Numerical,
            FitError::Internal(_) => FailureKind::Internal,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("stored model could not be decoded: {0}")]
    Decode(String),
    #[error("{0}")]
    Invalid(String),
    /// The model cannot answer this kind of question at all, whatever is asked (e.g.
    /// effects of a model fitted without covariates): a property of the model, not of
    /// the request.
    #[error("{0}")]
    NotOffered(String),
}

/// Why saved bytes (a checkpoint, the family's state in one, the state after a chain, a
/// kept sample) cannot be restored into this fit. A checkpoint that does not restore is
/// rejected and the fit starts from iteration 0, the job's record saying why
/// ([`super::fit_context::Resume::Rejected`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RestoreError {
    /// Not the section layout it claims: cut short, a length past the end, bytes left.
    #[error("{what} does not decode: {source}")]
    Layout { what: &'static str, source: LayoutError },
    /// A serde encoding that does not decode.
    #[error("{what} does not decode: {detail}")]
    Undecodable { what: &'static str, detail: String },
    /// Written in another version of the format.
    #[error("{what}'s format version {found} is not {expected}")]
    Version { what: &'static str, found: u32, expected: u32 },
    /// Written by another fit: another family, seed, schedule, parameters or input;
    /// `detail` says what differs.
    #[error("{what} belongs to another fit ({detail})")]
    OtherFit { what: &'static str, detail: String },
    /// Decodes, but a part of it does not fit this fit's input and parameters (a length,
    /// an id out of range, a non-finite value): `part` names the first that does not.
    #[error("{what} does not fit this input and these parameters ({part})")]
    Mismatch { what: &'static str, part: &'static str },
    /// Decodes and belongs to this fit, but holds what the fit cannot be in: a position
    /// past its end, documents out of order, a block of the wrong shape.
    #[error("{what} is inconsistent: {detail}")]
    Inconsistent { what: &'static str, detail: String },
}

impl RestoreError {
    /// `what`'s serde encoding did not decode.
    pub fn undecodable(what: &'static str, error: impl std::fmt::Display) -> Self {
        RestoreError::Undecodable { what, detail: error.to_string() }
    }

    /// `what`'s section layout is broken (for `map_err`).
    pub fn layout(what: &'static str) -> impl FnOnce(LayoutError) -> Self {
        move |source| RestoreError::Layout { what, source }
    }

    pub fn other_fit(what: &'static str, detail: impl Into<String>) -> Self {
        RestoreError::OtherFit { what, detail: detail.into() }
    }

    /// The first of `checks` (passed, part) that failed, as a [`RestoreError::Mismatch`]
    /// of `what`.
    pub fn first_mismatch(what: &'static str, checks: &[(bool, &'static str)]) -> Result<(), Self> {
        match checks.iter().find(|(ok, _)| !ok) {
            Some(&(_, part)) => Err(RestoreError::Mismatch { what, part }),
            None => Ok(()),
        }
    }

    pub fn inconsistent(what: &'static str, detail: impl Into<String>) -> Self {
        RestoreError::Inconsistent { what, detail: detail.into() }
    }
}
