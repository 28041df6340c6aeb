//! Which shaped columns each encoding stores when forced: [`columns_for`] draws, for an
//! [`EncodingKind`], a column of every type and shape whose every page that encoding can store
//! (forcing it on anything else fails the write, which `forcing.rs` tests), for the forced round
//! trips of `round_trips.rs`. The values come from the shared generator's shapes.

use super::*;

/// Columns (named after their type and shape) whose every page `kind` can store when forced.
pub(crate) fn columns_for(rng: &mut StdRng, kind: EncodingKind, len: usize) -> Vec<(String, ArrayRef)> {
    let mut out: Vec<(String, ArrayRef)> = Vec::new();
    let mut push = |name: String, array: ArrayRef| {
        let name = format!("c{}: {name}", out.len());
        out.push((name, array));
    };
    let fixed_width_other = |rng: &mut StdRng, t: &DataType, mode: ValueMode| {
        let null_probability = *[0.0, 0.05, 0.7].choose(rng).unwrap();
        random_array(rng, t, len, ColumnGen { null_probability, mode })
    };
    match kind {
        EncodingKind::Plain => {
            for t in all_flat_types() {
                let (shape, array) = shaped_array(rng, &t, len);
                push(format!("{t} {shape}"), array);
            }
        }
        EncodingKind::Constant => {
            for t in int_types() {
                let values = int_values(rng, len, IntShape::Constant, int_bounds(&t));
                let nulls = random_validity(rng, len);
                push(format!("{t}"), int_array(&t, &values, nulls));
            }
            for t in [DataType::Float16, DataType::Float32, DataType::Float64] {
                let nulls = random_validity(rng, len);
                push(format!("{t}"), float_array(rng, &t, len, FloatShape::Constant, nulls));
            }
            for shape in [0, 1] {
                let nulls = random_validity(rng, len);
                push(format!("bool {shape}"), bool_array(rng, len, shape, nulls));
            }
            for t in BYTES_TYPES {
                let values = bytes_values(rng, len, BytesShape::Constant, is_utf8(&t));
                let nulls = random_validity(rng, len);
                push(format!("{t}"), bytes_array(&t, &values, nulls.as_ref()));
                // Null slots of strings hold empty values: only the valid ones are constant.
                let values = vec![b"R".to_vec(); len];
                let nulls = NullBuffer::from_iter((0..len).map(|i| i % 3 != 0));
                push(format!("{t} with nulls"), bytes_array(&t, &values, Some(&nulls)));
            }
            for t in other_fixed_types() {
                push(format!("{t}"), fixed_width_other(rng, &t, ValueMode::Constant));
            }
        }
        EncodingKind::Bitpacked => {
            for t in int_types() {
                for shape in INT_SHAPES {
                    // 16-byte values are packed in 64-bit lanes: their range must fit.
                    let fits = int_layout(&t).0 < 16
                        || matches!(
                            shape,
                            IntShape::Small
                                | IntShape::NearMin
                                | IntShape::NearMax
                                | IntShape::Sorted
                                | IntShape::Constant
                        );
                    if fits && (shape != IntShape::Constant || rng.random_bool(0.3)) {
                        let values = int_values(rng, len, shape, int_bounds(&t));
                        let nulls = random_validity(rng, len);
                        push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                    }
                }
            }
        }
        EncodingKind::Delta => {
            for t in int_types().into_iter().filter(|t| int_layout(t).0 <= 8) {
                for shape in [IntShape::Sorted, IntShape::SortedWide, IntShape::Constant, IntShape::NearMax] {
                    let mut values = int_values(rng, len, shape, int_bounds(&t));
                    values.sort_unstable();
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                }
            }
        }
        EncodingKind::Rle | EncodingKind::Dictionary => {
            for t in int_types() {
                for shape in [IntShape::Runs, IntShape::Random, IntShape::Small, IntShape::Extremes] {
                    let values = int_values(rng, len, shape, int_bounds(&t));
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), int_array(&t, &values, nulls));
                }
            }
            for t in [DataType::Float16, DataType::Float32, DataType::Float64] {
                for shape in [FloatShape::RandomBits, FloatShape::Specials, FloatShape::Runs] {
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), float_array(rng, &t, len, shape, nulls));
                }
            }
            for t in BYTES_TYPES {
                for shape in [BytesShape::Random, BytesShape::FewDistinct, BytesShape::Runs, BytesShape::Empty] {
                    let values = bytes_values(rng, len, shape, is_utf8(&t));
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), bytes_array(&t, &values, nulls.as_ref()));
                }
            }
            for t in other_fixed_types() {
                for mode in [ValueMode::Random, ValueMode::Small] {
                    push(format!("{t} {mode:?}"), fixed_width_other(rng, &t, mode));
                }
            }
        }
        EncodingKind::AlpRd | EncodingKind::Alp => {
            for t in [DataType::Float32, DataType::Float64] {
                for shape in [
                    FloatShape::Decimals,
                    FloatShape::Normal,
                    FloatShape::RandomBits,
                    FloatShape::Specials,
                    FloatShape::Runs,
                    FloatShape::Constant,
                ] {
                    let nulls = random_validity(rng, len);
                    push(format!("{t} {shape:?}"), float_array(rng, &t, len, shape, nulls));
                }
            }
        }
        EncodingKind::Fsst | EncodingKind::OnPair => {
            for t in BYTES_TYPES {
                for shape in [BytesShape::Text, BytesShape::AllBytes, BytesShape::Long(40_000)] {
                    let values = bytes_values(rng, len, shape, is_utf8(&t));
                    // Sparse nulls: a page needs 1 KiB of strings for FSST to take it (see
                    // `forcing_fsst_on_small_pages_fails`).
                    let nulls = NullBuffer::from_iter((0..len).map(|_| !rng.random_bool(0.02)));
                    push(format!("{t} {shape:?}"), bytes_array(&t, &values, Some(&nulls)));
                }
            }
        }
    }
    out
}
