//! Logical encodings: how Arrow arrays of each type map onto [`DataBlock`](super::DataBlock)s,
//! one file per family of Arrow types.

pub mod primitive;
