//! [`ByteCount`], the unit of sizes every layer shares (options, I/O, the writer).
//!
//! A leaf: it imports nothing from the crate but its error type, so that any layer may use it.

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result, bail};

/// A number of bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct ByteCount(pub u64);

impl ByteCount {
    /// `n` kibibytes.
    pub const fn kib(n: u64) -> Self {
        Self(n * 1024)
    }

    /// `n` mebibytes.
    pub const fn mib(n: u64) -> Self {
        Self(n * 1024 * 1024)
    }

    /// `n` gibibytes.
    pub const fn gib(n: u64) -> Self {
        Self(n * 1024 * 1024 * 1024)
    }

    /// The number of bytes.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ByteCount {
    /// Whole multiples of a binary unit are shown in it (`256 MiB`), other sizes in bytes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let units = [(1u64 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
        match units.iter().find(|(size, _)| self.0 >= *size && self.0.is_multiple_of(*size)) {
            Some((size, unit)) => write!(f, "{} {unit}", self.0 / size),
            None => write!(f, "{} B", self.0),
        }
    }
}

impl FromStr for ByteCount {
    type Err = Error;

    /// A whole number of bytes, optionally followed by a unit: `B`, `KiB`/`KB`/`K`, `MiB`/`MB`/`M`,
    /// `GiB`/`GB`/`G` (all binary multiples, case-insensitive, spaces allowed: `64 MiB`).
    fn from_str(text: &str) -> Result<Self> {
        let text = text.trim();
        let split = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
        let (digits, unit) = text.split_at(split);
        let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            _ => bail!(invalid, "{text:?} is not a size (a number of bytes, optionally with KiB, MiB or GiB)"),
        };
        digits
            .parse::<u64>()
            .ok()
            .and_then(|n| n.checked_mul(scale))
            .map(ByteCount)
            .ok_or_else(|| Error::invalid_argument(format!("{text:?} is not a size (a number of bytes)")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print_in_binary_units() {
        assert_eq!("64MiB".parse::<ByteCount>().unwrap(), ByteCount::mib(64));
        assert_eq!(" 3 kb ".parse::<ByteCount>().unwrap(), ByteCount::kib(3));
        assert_eq!("17".parse::<ByteCount>().unwrap(), ByteCount(17));
        assert!("-1".parse::<ByteCount>().is_err());
        assert!("1.5 GiB".parse::<ByteCount>().is_err());
        assert!("99999999999999 GiB".parse::<ByteCount>().is_err());
        assert_eq!(ByteCount::mib(256).to_string(), "256 MiB");
        assert_eq!(ByteCount(1000).to_string(), "1000 B");
    }
}
