//! Errors of the design layer: every message names the file, the place (line:column
//! for RON errors, a field path such as `ports[1].plane` for semantic ones) and what
//! is wrong.

/// Why a design file, a set of parameter values, or the geometry they make is unusable.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DesignError {
    /// The file could not be read.
    #[error("{file}: cannot read the design file: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    /// RON syntax, an unknown or missing field, a value of the wrong type.
    #[error("{file}:{line}:{col}: {message}")]
    Syntax { file: String, line: usize, col: usize, message: String },
    /// An expression names something that is neither a constant nor a parameter.
    #[error("{file}: {at}: unknown name `{name}` in \"{expr}\" (known names: {known})")]
    UnknownName { file: String, at: String, name: String, expr: String, known: String },
    /// An expression does not parse, or does not evaluate to a finite number.
    #[error("{file}: {at}: \"{expr}\" {problem}")]
    BadExpression { file: String, at: String, expr: String, problem: String },
    /// A parameter value lies outside its declared bounds.
    #[error("{file}: parameters.{name}: value {value} is outside its bounds [{min}, {max}]")]
    OutOfBounds { file: String, name: String, value: f64, min: f64, max: f64 },
    /// A constraint does not hold for the given values.
    #[error("{file}: {at}: constraint \"{constraint}\" is violated ({detail})")]
    ConstraintViolated { file: String, at: String, constraint: String, detail: String },
    /// Anything else that is semantically wrong: bounds, geometry, ports, mesh, goals.
    #[error("{file}: {at}: {message}")]
    Invalid { file: String, at: String, message: String },
}

impl DesignError {
    /// A semantic error at field path `at` of `file`.
    pub fn invalid(file: &str, at: impl Into<String>, message: impl Into<String>) -> Self {
        DesignError::Invalid { file: file.to_string(), at: at.into(), message: message.into() }
    }

    /// Wrap a RON error with its position.
    pub(crate) fn from_ron(file: &str, e: ron::error::SpannedError) -> Self {
        use ron::error::Error as E;
        // ron 0.8 prints some of these without spaces ("`x`in `Iris`"); say them plainly.
        let message = match &e.code {
            E::NoSuchStructField { expected, found, outer } => format!(
                "unknown field `{found}`{}; expected one of: {}",
                outer.as_ref().map(|o| format!(" in `{o}`")).unwrap_or_default(),
                expected.join(", ")
            ),
            E::NoSuchEnumVariant { expected, found, outer } => format!(
                "unknown variant `{found}`{}; expected one of: {}",
                outer.as_ref().map(|o| format!(" of `{o}`")).unwrap_or_default(),
                expected.join(", ")
            ),
            E::MissingStructField { field, outer } => {
                format!("missing field `{field}`{}", outer.as_ref().map(|o| format!(" in `{o}`")).unwrap_or_default())
            }
            other => other.to_string(),
        };
        DesignError::Syntax { file: file.to_string(), line: e.position.line, col: e.position.col, message }
    }

    /// The file the error is about.
    pub fn file(&self) -> &str {
        match self {
            DesignError::Io { file, .. }
            | DesignError::Syntax { file, .. }
            | DesignError::UnknownName { file, .. }
            | DesignError::BadExpression { file, .. }
            | DesignError::OutOfBounds { file, .. }
            | DesignError::ConstraintViolated { file, .. }
            | DesignError::Invalid { file, .. } => file,
        }
    }
}
