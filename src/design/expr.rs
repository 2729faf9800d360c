//! Numbers-or-expressions in design files, and their evaluation over the design's
//! constants and one set of parameter values (evalexpr does the parsing).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use evalexpr::{ContextWithMutableVariables, DefaultNumericTypes, HashMapContext, Node, Operator, Value};
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::error::DesignError;

/// A numeric field: a plain number or an expression string over constants and
/// parameters, e.g. `"feed + t + l1"`. Lengths are in the design's units.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Text(String),
}

impl Expr {
    /// The expression as written (numbers in Rust's shortest form).
    pub fn source(&self) -> String {
        match self {
            Expr::Num(x) => format!("{x}"),
            Expr::Text(s) => s.clone(),
        }
    }
}

impl From<f64> for Expr {
    fn from(x: f64) -> Self {
        Expr::Num(x)
    }
}

impl From<&str> for Expr {
    fn from(s: &str) -> Self {
        Expr::Text(s.to_string())
    }
}

impl Serialize for Expr {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Expr::Num(x) => s.serialize_f64(*x),
            Expr::Text(t) => s.serialize_str(t),
        }
    }
}

impl<'de> Deserialize<'de> for Expr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Hand-written rather than `#[serde(untagged)]`: the error then says what is
        // expected instead of "did not match any variant".
        struct ExprVisitor;
        impl Visitor<'_> for ExprVisitor {
            type Value = Expr;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or an expression string such as \"feed + t\"")
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Expr, E> {
                Ok(Expr::Num(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Expr, E> {
                Ok(Expr::Num(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Expr, E> {
                Ok(Expr::Num(v as f64))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Expr, E> {
                Ok(Expr::Text(v.to_string()))
            }
        }
        d.deserialize_any(ExprVisitor)
    }
}

/// Functions an expression may call (evalexpr built-ins that return numbers).
const FUNCTIONS: &[&str] = &[
    "min",
    "max",
    "floor",
    "round",
    "ceil",
    "if",
    "math::ln",
    "math::log",
    "math::log2",
    "math::log10",
    "math::exp",
    "math::exp2",
    "math::pow",
    "math::cos",
    "math::acos",
    "math::cosh",
    "math::acosh",
    "math::sin",
    "math::asin",
    "math::sinh",
    "math::asinh",
    "math::tan",
    "math::atan",
    "math::tanh",
    "math::atanh",
    "math::atan2",
    "math::sqrt",
    "math::cbrt",
    "math::hypot",
    "math::abs",
];

/// The longest expression accepted, in bytes.
pub const MAX_EXPR_LEN: usize = 1000;
/// The deepest nesting of parentheses accepted.
pub const MAX_EXPR_DEPTH: usize = 64;

/// Names every expression can use without declaring them.
pub const BUILTIN_NAMES: &[&str] = &["pi"];

/// Parse `text` into an evalexpr tree whose integer literals are floats, so that
/// `"1/2"` is 0.5 and not evalexpr's integer division 0.
pub fn compile(text: &str) -> Result<Node<DefaultNumericTypes>, String> {
    // evalexpr parses "" as an empty tree that evaluates to nothing: say so at load.
    if text.trim().is_empty() {
        return Err("the expression is empty (write a number or an expression over the parameters)".into());
    }
    // evalexpr parses and evaluates recursively: an expression nested thousands
    // deep would overflow the stack (an abort, not an error). No design needs this.
    if text.len() > MAX_EXPR_LEN {
        return Err(format!("is {} characters long; expressions are limited to {MAX_EXPR_LEN}", text.len()));
    }
    let (_, depth) = text.chars().fold((0usize, 0usize), |(d, max), c| match c {
        '(' => (d + 1, max.max(d + 1)),
        ')' => (d.saturating_sub(1), max),
        _ => (d, max),
    });
    if depth > MAX_EXPR_DEPTH {
        return Err(format!("nests parentheses {depth} deep; at most {MAX_EXPR_DEPTH} are allowed"));
    }
    let mut node = evalexpr::build_operator_tree::<DefaultNumericTypes>(text).map_err(|e| e.to_string())?;
    floatify(&mut node);
    Ok(node)
}

fn floatify(node: &mut Node<DefaultNumericTypes>) {
    if let Operator::Const { value: Value::Int(i) } = node.operator() {
        let f = *i as f64;
        *node.operator_mut() = Operator::Const { value: Value::Float(f) };
    }
    for child in node.children_mut() {
        floatify(child);
    }
}

/// Check that `text` parses, reads only `known` names (plus built-ins) and calls
/// only numeric built-in functions. Used at load time on every expression.
pub fn check(file: &str, at: &str, text: &str, known: &BTreeSet<String>) -> Result<(), DesignError> {
    let node = compile(text).map_err(|e| DesignError::BadExpression {
        file: file.into(),
        at: at.into(),
        expr: text.into(),
        problem: format!("does not parse: {e}"),
    })?;
    for name in node.iter_read_variable_identifiers() {
        if !known.contains(name) && !BUILTIN_NAMES.contains(&name) {
            let mut all: Vec<&str> = known.iter().map(String::as_str).collect();
            all.extend(BUILTIN_NAMES);
            return Err(DesignError::UnknownName {
                file: file.into(),
                at: at.into(),
                name: name.into(),
                expr: text.into(),
                known: all.join(", "),
            });
        }
    }
    if let Some(name) = node.iter_write_variable_identifiers().next() {
        return Err(DesignError::BadExpression {
            file: file.into(),
            at: at.into(),
            expr: text.into(),
            problem: format!("assigns to `{name}`; expressions may only read names"),
        });
    }
    if let Some(f) = node.iter_function_identifiers().find(|f| !FUNCTIONS.contains(f)) {
        return Err(DesignError::BadExpression {
            file: file.into(),
            at: at.into(),
            expr: text.into(),
            problem: format!("calls `{f}`, which is not one of: {}", FUNCTIONS.join(", ")),
        });
    }
    Ok(())
}

/// A comparison operator of a constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    Lt,
    Le,
    Gt,
    Ge,
}

/// Split a constraint such as `"w2 < w1"` into its operator and two sides.
pub fn comparison(text: &str) -> Result<(Cmp, Node<DefaultNumericTypes>, Node<DefaultNumericTypes>), String> {
    let root = compile(text)?;
    // build_operator_tree wraps the expression in a RootNode with one child.
    let top = match root.operator() {
        Operator::RootNode if root.children().len() == 1 => &root.children()[0],
        _ => &root,
    };
    let cmp = match top.operator() {
        Operator::Lt => Cmp::Lt,
        Operator::Leq => Cmp::Le,
        Operator::Gt => Cmp::Gt,
        Operator::Geq => Cmp::Ge,
        _ => return Err("is not a comparison (write it as `a < b`, `a <= b`, `a > b` or `a >= b`)".into()),
    };
    Ok((cmp, top.children()[0].clone(), top.children()[1].clone()))
}

/// Evaluation environment: constants, built-ins and one set of parameter values.
pub struct Scope {
    file: String,
    ctx: HashMapContext<DefaultNumericTypes>,
}

impl Scope {
    pub fn new(file: &str, constants: &BTreeMap<String, f64>, values: &BTreeMap<String, f64>) -> Scope {
        let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
        let builtins = [("pi".to_string(), std::f64::consts::PI)];
        for (k, v) in constants.iter().chain(values).chain(builtins.iter().map(|(k, v)| (k, v))) {
            // A HashMapContext refuses only a name set again with another type;
            // every value here is a Float, so this cannot fail.
            ctx.set_value(k.clone(), Value::Float(*v)).expect("HashMapContext accepts any value");
        }
        Scope { file: file.to_string(), ctx }
    }

    /// Evaluate a numeric field; `at` is its field path for errors.
    pub fn eval(&self, e: &Expr, at: &str) -> Result<f64, DesignError> {
        match e {
            // Load refuses these (design::finite); a file built in code must not pass them either.
            Expr::Num(x) if !x.is_finite() => Err(self.bad(at, &x.to_string(), "is not a finite number".into())),
            Expr::Num(x) => Ok(*x),
            Expr::Text(t) => self.eval_str(t, at),
        }
    }

    pub fn eval_str(&self, text: &str, at: &str) -> Result<f64, DesignError> {
        let node = compile(text).map_err(|e| self.bad(at, text, format!("does not parse: {e}")))?;
        self.eval_node(&node, text, at)
    }

    pub fn eval_node(&self, node: &Node<DefaultNumericTypes>, text: &str, at: &str) -> Result<f64, DesignError> {
        let v =
            node.eval_with_context(&self.ctx).map_err(|e| self.bad(at, text, format!("cannot be evaluated: {e}")))?;
        let x = match v {
            Value::Float(x) => x,
            Value::Int(i) => i as f64,
            Value::Boolean(b) => {
                return Err(self.bad(at, text, format!("is not a number (it gives the truth value {b})")))
            }
            Value::String(s) => return Err(self.bad(at, text, format!("is not a number (it gives the string {s:?})"))),
            Value::Tuple(_) => return Err(self.bad(at, text, "is not a number (it gives a tuple)".into())),
            Value::Empty => return Err(self.bad(at, text, "is not a number (it gives nothing)".into())),
        };
        if !x.is_finite() {
            return Err(self.bad(at, text, format!("is not a finite number (it gives {x})")));
        }
        Ok(x)
    }

    fn bad(&self, at: &str, text: &str, problem: String) -> DesignError {
        DesignError::BadExpression { file: self.file.clone(), at: at.into(), expr: text.into(), problem }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope() -> Scope {
        let c = BTreeMap::from([("a".to_string(), 7.112), ("t".to_string(), 0.5)]);
        let v = BTreeMap::from([("l1".to_string(), 5.0)]);
        Scope::new("f.ron", &c, &v)
    }

    #[test]
    fn integer_literals_divide_as_floats() {
        assert_eq!(scope().eval_str("1/2", "x").unwrap(), 0.5);
        assert!((scope().eval_str("a/28", "x").unwrap() - 0.254).abs() < 1e-12);
        assert_eq!(scope().eval_str("2*t + l1", "x").unwrap(), 6.0);
        assert!((scope().eval_str("math::sqrt(4) * pi", "x").unwrap() - 2.0 * std::f64::consts::PI).abs() < 1e-12);
        assert_eq!(scope().eval_str("26e9 / 1e9", "x").unwrap(), 26.0);
    }

    #[test]
    fn non_numbers_and_unknown_names_are_errors() {
        let e = scope().eval_str("l1 < 2", "geometry[0] (Box).min.x").unwrap_err().to_string();
        assert!(e.contains("geometry[0] (Box).min.x") && e.contains("is not a number"), "{e}");
        let e = scope().eval_str("1/0", "domain.x[1]").unwrap_err().to_string();
        assert!(e.contains("not a finite number"), "{e}");
        let known = BTreeSet::from(["a".to_string()]);
        let e = check("f.ron", "p", "a + zz", &known).unwrap_err().to_string();
        assert!(e.contains("unknown name `zz`") && e.contains("known names: a, pi"), "{e}");
        let e = check("f.ron", "p", "random(1)", &known).unwrap_err().to_string();
        assert!(e.contains("calls `random`"), "{e}");
        let e = check("f.ron", "p", "a = 3", &known).unwrap_err().to_string();
        assert!(e.contains("assigns"), "{e}");
    }

    #[test]
    fn comparisons_split_into_sides() {
        let (cmp, l, r) = comparison("w2 + 1 < w1").unwrap();
        assert_eq!(cmp, Cmp::Lt);
        let c = BTreeMap::new();
        let v = BTreeMap::from([("w1".to_string(), 4.0), ("w2".to_string(), 2.0)]);
        let s = Scope::new("f", &c, &v);
        assert_eq!(s.eval_node(&l, "", "").unwrap(), 3.0);
        assert_eq!(s.eval_node(&r, "", "").unwrap(), 4.0);
        assert!(comparison("w1 + w2").is_err());
    }
}
