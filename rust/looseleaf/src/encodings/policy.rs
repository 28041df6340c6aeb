//! [`EncodingPolicy`]: what a writer may, must or must not use for a column's pages, named by
//! [`EncodingKind`], and [`ColumnPolicies`], the policies of a file's columns by path.
//!
//! Policies only constrain the choice; `strategy.rs` makes it.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use crate::error::{Error, Result};

/// The encodings a policy can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EncodingKind {
    /// Values stored as they are.
    Plain,
    /// One value for the whole page.
    Constant,
    /// Frame of reference and bit-packing (integers).
    Bitpacked,
    /// Bit-packed differences (non-decreasing integers).
    Delta,
    /// Run-length.
    Rle,
    /// Dictionary of distinct values.
    Dictionary,
    /// FSST string compression.
    Fsst,
    /// Floats split into coded high bits and packed low bits (ALP-RD).
    AlpRd,
    /// Floats that are decimals, as integers (ALP).
    Alp,
    /// Strings as codes of tokens from a learnt dictionary (OnPair).
    OnPair,
}

impl EncodingKind {
    /// Every encoding a policy can name.
    pub const ALL: [EncodingKind; 10] = [
        Self::Plain,
        Self::Constant,
        Self::Bitpacked,
        Self::Delta,
        Self::Rle,
        Self::Dictionary,
        Self::Fsst,
        Self::AlpRd,
        Self::Alp,
        Self::OnPair,
    ];

    /// The name used in options (`plain`, `constant`, `bitpacked`, `delta`, `rle`, `dictionary`,
    /// `fsst`, `alp_rd`, `alp`, `onpair`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "plain",
            Self::Constant => "constant",
            Self::Bitpacked => "bitpacked",
            Self::Delta => "delta",
            Self::Rle => "rle",
            Self::Dictionary => "dictionary",
            Self::Fsst => "fsst",
            Self::AlpRd => "alp_rd",
            Self::Alp => "alp",
            Self::OnPair => "onpair",
        }
    }
}

impl FromStr for EncodingKind {
    type Err = Error;

    fn from_str(name: &str) -> Result<Self> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "plain" => Self::Plain,
            "constant" => Self::Constant,
            "bitpacked" | "bitpacking" | "for" => Self::Bitpacked,
            "delta" => Self::Delta,
            "rle" | "run_length" => Self::Rle,
            "dictionary" | "dict" => Self::Dictionary,
            "fsst" => Self::Fsst,
            "alp_rd" | "alprd" => Self::AlpRd,
            "alp" => Self::Alp,
            "onpair" | "on_pair" => Self::OnPair,
            other => {
                let known: Vec<&str> = Self::ALL.iter().map(|kind| kind.name()).collect();
                return Err(Error::invalid_argument(format!(
                    "unknown encoding {other:?} (known: {})",
                    known.join(", ")
                )));
            }
        })
    }
}

/// Which encodings a column may use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EncodingPolicy {
    /// Use this encoding for the column's values (an error if it cannot store a page).
    pub force: Option<EncodingKind>,
    /// Never use these, anywhere in the column's pages.
    pub forbid: HashSet<EncodingKind>,
}

impl EncodingPolicy {
    /// Plain values only: every other encoding forbidden (predictable layouts, for tests and
    /// for data that does not compress).
    pub fn plain_only() -> Self {
        Self {
            force: None,
            forbid: EncodingKind::ALL.into_iter().filter(|kind| *kind != EncodingKind::Plain).collect(),
        }
    }

    /// Whether the writer may use `kind` (plain values are always allowed).
    pub(crate) fn allows(&self, kind: EncodingKind) -> bool {
        kind == EncodingKind::Plain || !self.forbid.contains(&kind)
    }

    /// The policy of the values inside an encoding (dictionary indices, run values...): the
    /// same prohibitions, nothing forced.
    pub(crate) fn nested(&self) -> EncodingPolicy {
        EncodingPolicy { force: None, forbid: self.forbid.clone() }
    }
}

/// Encoding policies by column path, with the default for the others.
#[derive(Debug, Clone, Default)]
pub struct ColumnPolicies {
    /// Policies of named columns (dotted paths).
    pub columns: HashMap<String, EncodingPolicy>,
    /// The policy of the other columns.
    pub default: EncodingPolicy,
}

impl ColumnPolicies {
    /// The policy of the column at `path`.
    pub fn get(&self, path: &str) -> EncodingPolicy {
        self.columns.get(path).cloned().unwrap_or_else(|| self.default.clone())
    }
}
