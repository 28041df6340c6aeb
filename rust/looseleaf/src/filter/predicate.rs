//! [`Predicate`]: a filter as the caller writes it, before it is checked against a file.

use std::fmt;

use arrow_array::{Array, ArrayRef, Scalar};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CompareOp {
    /// `=`
    Eq,
    /// `!=`
    NotEq,
    /// `<`
    Lt,
    /// `<=`
    LtEq,
    /// `>`
    Gt,
    /// `>=`
    GtEq,
}

impl CompareOp {
    /// The operator that holds exactly when this one does not (on non-null values).
    pub fn negate(self) -> Self {
        match self {
            Self::Eq => Self::NotEq,
            Self::NotEq => Self::Eq,
            Self::Lt => Self::GtEq,
            Self::LtEq => Self::Gt,
            Self::Gt => Self::LtEq,
            Self::GtEq => Self::Lt,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flip(self) -> Self {
        match self {
            Self::Lt => Self::Gt,
            Self::LtEq => Self::GtEq,
            Self::Gt => Self::Lt,
            Self::GtEq => Self::LtEq,
            other => other,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Self::Eq => "=",
            Self::NotEq => "!=",
            Self::Lt => "<",
            Self::LtEq => "<=",
            Self::Gt => ">",
            Self::GtEq => ">=",
        }
    }
}

/// What `IN` answers for null values, as Arrow's `is_in` (`SetLookupOptions`) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NullMatching {
    /// A null value is in the set if the set holds a null (never null itself).
    #[default]
    Match,
    /// Nulls are never in the set.
    Skip,
    /// A null value gives null.
    EmitNull,
    /// A null value gives null, and so does a value not found in a set holding a null.
    Inconclusive,
}

/// A path to a column: a top-level field's name, then struct children's names.
pub type ColumnPath = Vec<String>;

/// A filter on rows: which rows a read returns. Evaluated with SQL's three-valued logic, as
/// `pyarrow.Table.filter` does: a row is kept when the predicate is true, not when it is null.
/// Comparisons of floats follow IEEE 754 (NaN compares false, except with `!=`).
#[derive(Debug, Clone)]
pub enum Predicate {
    /// `column <op> value`, `value` a one-element array of any type comparable with the
    /// column's (integers, floats and decimals with each other, dates with timestamps).
    Compare {
        /// The column.
        column: ColumnPath,
        /// The comparison.
        op: CompareOp,
        /// The constant, a one-element array (a null constant makes the comparison null).
        value: ArrayRef,
    },
    /// `column IN values`.
    In {
        /// The column.
        column: ColumnPath,
        /// The set, an array of values comparable with the column's.
        values: ArrayRef,
        /// What null values of the column give.
        nulls: NullMatching,
    },
    /// `column IS NULL`.
    IsNull(ColumnPath),
    /// `column IS NOT NULL`.
    IsNotNull(ColumnPath),
    /// A boolean column, true where it is true.
    Column(ColumnPath),
    /// A constant: true, false or null.
    Literal(Option<bool>),
    /// True where every part is true.
    And(Vec<Predicate>),
    /// True where some part is true.
    Or(Vec<Predicate>),
    /// True where the part is false.
    Not(Box<Predicate>),
}

impl Predicate {
    /// `column <op> value` for a top-level `column`.
    pub fn compare(column: &str, op: CompareOp, value: Scalar<ArrayRef>) -> Self {
        Self::Compare { column: vec![column.to_string()], op, value: value.into_inner() }
    }

    /// `column IN values` for a top-level `column` (nulls matched as Arrow's default does).
    pub fn is_in(column: &str, values: ArrayRef) -> Self {
        Self::In { column: vec![column.to_string()], values, nulls: NullMatching::Match }
    }

    /// `self AND other`.
    pub fn and(self, other: Predicate) -> Self {
        match self {
            Self::And(mut parts) => {
                parts.push(other);
                Self::And(parts)
            }
            first => Self::And(vec![first, other]),
        }
    }

    /// `self OR other`.
    pub fn or(self, other: Predicate) -> Self {
        match self {
            Self::Or(mut parts) => {
                parts.push(other);
                Self::Or(parts)
            }
            first => Self::Or(vec![first, other]),
        }
    }

    /// `NOT self`.
    #[allow(clippy::should_implement_trait)]
    pub fn not(self) -> Self {
        Self::Not(Box::new(self))
    }

    /// The paths of the columns the predicate reads, each once, in order of appearance.
    pub fn columns(&self) -> Vec<&ColumnPath> {
        let mut out: Vec<&ColumnPath> = Vec::new();
        self.visit_columns(&mut |path| {
            if !out.contains(&path) {
                out.push(path);
            }
        });
        out
    }

    fn visit_columns<'a>(&'a self, f: &mut impl FnMut(&'a ColumnPath)) {
        match self {
            Self::Compare { column, .. } | Self::In { column, .. } => f(column),
            Self::IsNull(column) | Self::IsNotNull(column) | Self::Column(column) => f(column),
            Self::Literal(_) => {}
            Self::And(parts) | Self::Or(parts) => parts.iter().for_each(|p| p.visit_columns(f)),
            Self::Not(part) => part.visit_columns(f),
        }
    }
}

/// Displays a column path as dotted names.
pub(crate) fn dotted(path: &[String]) -> String {
    path.join(".")
}

impl fmt::Display for Predicate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let literal = |value: &ArrayRef| {
            if value.len() == 1 && value.is_valid(0) {
                format!("{:?}", value.slice(0, 1)).replace('\n', "").replace("  ", "")
            } else {
                "null".to_string()
            }
        };
        match self {
            Self::Compare { column, op, value } => {
                write!(f, "{} {} {} ({})", dotted(column), op.symbol(), literal(value), value.data_type())
            }
            Self::In { column, values, .. } => {
                write!(f, "{} IN ({} values of {})", dotted(column), values.len(), values.data_type())
            }
            Self::IsNull(column) => write!(f, "{} IS NULL", dotted(column)),
            Self::IsNotNull(column) => write!(f, "{} IS NOT NULL", dotted(column)),
            Self::Column(column) => write!(f, "{}", dotted(column)),
            Self::Literal(value) => write!(f, "{}", value.map_or("null".to_string(), |v| v.to_string())),
            Self::And(parts) | Self::Or(parts) => {
                let joiner = if matches!(self, Self::And(_)) { " AND " } else { " OR " };
                let parts: Vec<String> = parts.iter().map(|p| format!("({p})")).collect();
                write!(f, "{}", parts.join(joiner))
            }
            Self::Not(part) => write!(f, "NOT ({part})"),
        }
    }
}
