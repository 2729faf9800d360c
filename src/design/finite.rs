//! Every number written in a design file must be finite. RON reads `NaN`,
//! `inf` and `1e999` as floats; where a length, frequency or setting is
//! expected such a value would otherwise reach the mesher (which loops
//! forever over a NaN extent) or the engines (a silently wrong answer). The
//! check walks the file twice: the typed numeric fields first (their paths read
//! as in every other message, `ports[0].plane`, `domain.y[0]`), then the text
//! as a plain RON value tree, so that no number anywhere escapes, settings and
//! goals included.

use ron::value::{Number, Value};

use super::error::DesignError;
use super::expr::Expr;
use super::format::DesignFile;

/// The first number of `d` (typed fields) or of `text` (anywhere) that is not finite.
pub(crate) fn check(d: &DesignFile, text: &str, file: &str) -> Result<(), DesignError> {
    for (at, e) in super::validate::numeric_fields(d) {
        if let Expr::Num(x) = e {
            if !x.is_finite() {
                return Err(refused(file, &at, *x));
            }
        }
    }
    for (at, x) in [("band.start", d.band.start), ("band.stop", d.band.stop)] {
        if !x.is_finite() {
            return Err(refused(file, at, x));
        }
    }
    // The typed parse succeeded, so the text is RON; should the untyped parse
    // still fail (an extension it does not know), the typed checks stand alone.
    if let Ok(v) = ron::Options::default().from_str::<Value>(text) {
        if let Some((at, x)) = first_non_finite(&v, "") {
            return Err(refused(file, &at, x));
        }
    }
    Ok(())
}

fn refused(file: &str, at: &str, x: f64) -> DesignError {
    DesignError::invalid(file, at, format!("{x} is not a finite number: NaN and infinities are not allowed in a design file"))
}

/// Depth-first (a map's keys in sorted order): the path and value of the first non-finite float.
fn first_non_finite(v: &Value, at: &str) -> Option<(String, f64)> {
    match v {
        Value::Number(Number::Float(f)) if !f.get().is_finite() => Some((at.to_string(), f.get())),
        Value::Option(Some(inner)) => first_non_finite(inner, at),
        Value::Seq(items) => items.iter().enumerate().find_map(|(i, x)| first_non_finite(x, &format!("{at}[{i}]"))),
        Value::Map(m) => m.iter().find_map(|(k, x)| {
            let key = match k {
                Value::String(s) => s.clone(),
                other => format!("{other:?}"),
            };
            let path = if at.is_empty() { key } else { format!("{at}.{key}") };
            first_non_finite(x, &path)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_of_a_literal_nan_anywhere() {
        let v: Value = ron::from_str("Design(a: 1.0, goals: [Goal(band: (1.0, inf))], o: Some(NaN))").unwrap();
        assert_eq!(first_non_finite(&v, ""), Some(("goals[0].band[1]".to_string(), f64::INFINITY)));
        let v: Value = ron::from_str("(x: (lo: 1, hi: -inf))").unwrap();
        assert_eq!(first_non_finite(&v, "").map(|p| p.0), Some("x.hi".to_string()));
        let v: Value = ron::from_str("(x: 1e300, y: [1, 2])").unwrap();
        assert_eq!(first_non_finite(&v, ""), None);
    }
}
