//! Logical encodings: how Arrow arrays map onto [`DataBlock`](super::DataBlock)s, one file per
//! family of Arrow types. Types spread over several columns (structs, lists) are split and
//! reassembled by the writer and the decoders; what they store in their own column (validity,
//! list offsets) is described here.

pub mod dictionary;
pub mod fixed_size_list;
pub mod list;
pub mod primitive;
