//! Files that legitimately decode to terabytes: a few hundred bytes of metadata may claim 2^40
//! rows of encodings that store nothing per value (a constant, all nulls, bit-packing of width
//! 0). Every read of them runs in a child process whose address space is capped at 4 GiB
//! (`RLIMIT_AS`), where an allocation that fails would abort the process: a whole result that
//! cannot fit is refused before anything is allocated, with an error stating its rows and
//! bytes; a stream proceeds in bounded memory; a `take`, a filtered read, a plan and the
//! metadata work as for any file. The child exits normally or the test fails.

// Tests report failures by panicking.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, Scalar, StringArray};
use arrow_schema::{DataType, Field, Schema};
use common::rewrite::rewrite_file;
use common::runtime;
use futures::StreamExt;
use looseleaf::filter::{CompareOp, Predicate};
use looseleaf::{EncodingKind, EncodingPolicy, Error, ErrorKind, FileReader, FileWriter, WriterOptions};
use looseleaf_testing::MemoryReader;

/// Set in the child: the test body runs there, capped.
const CHILD: &str = "LOOSELEAF_BOMB_CHILD";
/// The child's address-space cap.
const CAP: u64 = 4 << 30;

/// Runs `body` in a child process of this test binary capped at [`CAP`] bytes of address space,
/// and fails unless it exits normally.
fn in_capped_child(test: &str, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some() {
        let limit = libc::rlimit { rlim_cur: CAP, rlim_max: CAP };
        // SAFETY: sets a limit of this process; no memory of it is involved.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
        body();
        return;
    }
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the capped child ended with {:?}:\n{}\n{stderr}",
        output.status,
        String::from_utf8_lossy(&output.stdout)
    );
}

/// A file of `rows` rows: `c` a constant string of 40 bytes (short enough for its statistics to
/// keep it as its maximum), `n` all-null integers, `z`
/// zeros bit-packed at width 0; then its metadata edited to claim `claimed` rows.
fn bomb(rows: usize, claimed: u64) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("c", DataType::Utf8, false),
        Field::new("n", DataType::Int64, true),
        Field::new("z", DataType::Int64, false),
    ]));
    let columns: Vec<ArrayRef> = vec![
        Arc::new(StringArray::from(vec!["x".repeat(40); rows])),
        Arc::new(Int64Array::from(vec![None; rows])),
        Arc::new(Int64Array::from(vec![0; rows])),
    ];
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let forced = |kind| EncodingPolicy { force: Some(kind), ..EncodingPolicy::default() };
    let options = WriterOptions::default()
        .with_zone_map_rows(0)
        .with_encoding_policy("c", forced(EncodingKind::Constant))
        .with_encoding_policy("z", forced(EncodingKind::Bitpacked));
    let bytes = runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bomb.leaf");
        let mut writer = FileWriter::create_path(&path, schema, options).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
        std::fs::read(&path).unwrap()
    });
    rewrite_file(
        &bytes,
        |footer| footer.num_rows = claimed,
        |_, column| {
            assert_eq!(column.pages.len(), 1, "one page a column");
            column.pages[0].num_rows = claimed;
        },
    )
}

async fn open(bytes: Vec<u8>) -> FileReader {
    FileReader::open(Arc::new(MemoryReader::new(bytes, "memory://bomb.leaf"))).await.unwrap()
}

fn assert_out_of_memory(result: looseleaf::Result<impl std::fmt::Debug>, rows: u64) {
    let error = result.unwrap_err();
    assert_eq!(error.kind(), ErrorKind::OutOfMemory, "{error}");
    let text = error.to_string();
    assert!(text.contains("bomb.leaf") && text.contains(&format!("{rows} rows")), "{text}");
}

#[test]
fn terabyte_claims_are_refused_or_streamed_never_an_abort() {
    in_capped_child("terabyte_claims_are_refused_or_streamed_never_an_abort", || {
        let claimed = 1u64 << 40;
        let bytes = bomb(1000, claimed);
        runtime().block_on(async {
            let file = open(bytes).await;
            assert_eq!(file.num_rows(), claimed);
            // The whole result: refused before anything is read or allocated.
            assert_out_of_memory(file.read().check_result_fits().await, claimed);
            assert_out_of_memory(file.read().with_columns(vec!["z".into()]).check_result_fits().await, claimed);
            // A take of a few rows anywhere: those rows.
            let taken = file.take(&[0, claimed - 1, 1 << 35], None).await.unwrap();
            assert_eq!(taken.num_rows(), 3);
            assert_eq!(taken.column(2).as_ref(), &Int64Array::from(vec![0; 3]) as &dyn arrow_array::Array);
            // A stream: batch after batch in bounded memory (a few batches read).
            let mut stream = file.read().stream().await.unwrap();
            for _ in 0..3 {
                assert_eq!(stream.next().await.unwrap().unwrap().num_rows(), 65_536);
            }
            drop(stream);
            // Filtered reads: one that statistics rule out ends at once, one that matches
            // everything streams; counting and planning.
            let other = Scalar::new(Arc::new(StringArray::from(vec!["y"])) as ArrayRef);
            let none = file.read().with_filter(Predicate::compare("c", CompareOp::Eq, other));
            assert_eq!(none.clone().count_rows().await.unwrap(), 0);
            let mut empty = none.stream().await.unwrap();
            assert!(empty.next().await.is_none());
            let all = file.read().with_filter(Predicate::IsNull(vec!["n".into()])).with_columns(vec!["z".into()]);
            let mut matching = all.stream().await.unwrap();
            assert!(matching.next().await.unwrap().unwrap().num_rows() > 0);
            drop(matching);
            file.read().plan().await.unwrap();
            file.metadata().await.unwrap();
        });
    });
}

#[test]
fn counts_past_every_integer_type_are_errors_never_panics() {
    in_capped_child("counts_past_every_integer_type_are_errors_never_panics", || {
        let claims = [1u64 << 31, (1 << 32) + 7, 1 << 62, u64::MAX - 1, u64::MAX];
        let files: Vec<(u64, Vec<u8>)> = claims.iter().map(|&claimed| (claimed, bomb(10, claimed))).collect();
        runtime().block_on(async {
            for (claimed, bytes) in files {
                let Ok(file) = FileReader::open(Arc::new(MemoryReader::new(bytes, "memory://bomb.leaf"))).await else {
                    continue;
                };
                let whole = file.read().check_result_fits().await;
                assert!(matches!(whole, Err(Error::OutOfMemory { .. }) | Err(Error::Corrupt { .. })), "{whole:?}");
                if let Ok(mut stream) = file.read().stream().await {
                    // The first batch, or an error: never a panic or an abort.
                    let _ = stream.next().await;
                }
                let _ = file.take(&[claimed.saturating_sub(1)], None).await;
                let _ = file.read().plan().await;
            }
        });
    });
}

/// `tests/data/bomb_2p40.leaf`, which the Python tests read under a cap, is this file's bomb
/// of 2^40 claimed rows; `LOOSELEAF_REGENERATE=1` writes it anew after a format change.
#[test]
fn the_python_tests_bomb_is_this_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/bomb_2p40.leaf");
    let bytes = bomb(1000, 1 << 40);
    if std::env::var_os("LOOSELEAF_REGENERATE").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "regenerate it with LOOSELEAF_REGENERATE=1");
}

/// An all-null column of fixed-size lists whose dimension the schema claims to be 2^31 - 1: one
/// row would be 8 GiB of zeroed floats in Arrow. Reads of it are errors saying so, never an
/// 8 GiB allocation (which under the cap would abort).
#[test]
fn a_huge_fixed_size_list_of_nulls_is_an_error() {
    in_capped_child("a_huge_fixed_size_list_of_nulls_is_an_error", || {
        let item = Arc::new(Field::new("item", DataType::Float32, true));
        let schema = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("v", DataType::FixedSizeList(item.clone(), 4), true),
        ]));
        let rows = 100;
        let vectors = arrow_array::new_null_array(&DataType::FixedSizeList(item, 4), rows);
        let batch =
            RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from_iter_values(0..rows as i64)), vectors])
                .unwrap();
        let bytes = runtime().block_on(async {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("bomb.leaf");
            let mut writer = FileWriter::create_path(&path, schema, WriterOptions::default()).await.unwrap();
            writer.write(&batch).await.unwrap();
            writer.finish().await.unwrap();
            std::fs::read(&path).unwrap()
        });
        let bytes = rewrite_file(
            &bytes,
            |footer| {
                let v = &mut footer.fields[1];
                v.data_type.as_mut().unwrap().fixed_size = i32::MAX as u32;
            },
            |_, _| {},
        );
        runtime().block_on(async {
            let file = FileReader::open(Arc::new(MemoryReader::new(bytes, "memory://bomb.leaf"))).await.unwrap();
            let taken = file.take(&[3], Some(&["v".to_string()])).await;
            let error = taken.unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::OutOfMemory | ErrorKind::Corrupt), "{error}");
            assert!(error.to_string().contains("bomb.leaf"), "{error}");
            let mut stream = file.read().with_columns(vec!["v".into()]).stream().await.unwrap();
            let error = stream.next().await.unwrap().unwrap_err();
            assert!(matches!(error.kind(), ErrorKind::OutOfMemory | ErrorKind::Corrupt), "{error}");
            // The other column reads as written.
            let ids = file.take(&[3, 99], Some(&["id".to_string()])).await.unwrap();
            assert_eq!(ids.num_rows(), 2);
        });
    });
}

/// `tests/data/nul_in_name.leaf`, a valid file whose field name holds a NUL byte (which the Python
/// tests open: it cannot cross Arrow's C data interface), is this one;
/// `LOOSELEAF_REGENERATE=1` writes it anew.
#[test]
fn the_python_tests_file_with_a_nul_in_a_name_is_this_one() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nul_in_name.leaf");
    let schema = Arc::new(Schema::new(vec![Field::new("a\0b", DataType::Int64, false)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int64Array::from(vec![1, 2, 3]))]).unwrap();
    let bytes = runtime().block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("nul.leaf");
        let mut writer = FileWriter::create_path(&file, schema, WriterOptions::default()).await.unwrap();
        writer.write(&batch).await.unwrap();
        writer.finish().await.unwrap();
        std::fs::read(&file).unwrap()
    });
    if std::env::var_os("LOOSELEAF_REGENERATE").is_some() {
        std::fs::write(&path, &bytes).unwrap();
    }
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "regenerate it with LOOSELEAF_REGENERATE=1");
}
