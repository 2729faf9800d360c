//! Errors of the GA layer: invalid gene spaces and settings, caught before a run starts.

/// Why a gene space, a settings block or a resume request was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum GaError {
    #[error("invalid gene `{name}`: {why}")]
    InvalidGene { name: String, why: String },
    #[error("the design has no genes to optimise")]
    NoGenes,
    #[error("invalid optimiser setting `{field}`: {why}")]
    InvalidSetting { field: &'static str, why: String },
    #[error("cannot resume: {0}")]
    Incompatible(String),
}
