//! The core crate's top-level modules form layers that only import downwards: no module imports
//! one above it, so there is no import circle between them. `docs/architecture.md` draws the same
//! layers; this test keeps the drawing true.
//!
//! A module's imports are the `crate::<module>` paths in its code (comments left out); the
//! crate-root re-exports other than `crate::Error` and `crate::Result` are not used inside the
//! crate, so that every dependency shows up in such a path.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may import modules of its own layer's predecessors only
/// (and, within a layer, none of the others).
const LAYERS: &[&[&str]] = &[
    // Leaves: values every layer shares.
    &["error"],
    &["units", "selection", "spark_form", "trace"],
    // Bytes on disk, and where they are.
    &["format", "storage"],
    // Reads of byte ranges: the I/O scheduler and its storage readers.
    &["io"],
    // Page layouts (scheduled through io), and the options of a read (which name io's budget).
    &["encodings", "options"],
    // Filters: predicates, their binding, evaluation and pruning by statistics.
    &["filter"],
    // Whole files: the reader's three loops, and the writer.
    &["read", "writer"],
    // Aggregates over a read's batches.
    &["aggregate"],
    // Many files.
    &["dataset"],
];

fn source_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        for entry in entries {
            source_files(&entry, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// Each top-level module's files: `src/<name>.rs` or `src/<name>/**.rs`.
fn modules(src: &Path) -> BTreeMap<String, Vec<PathBuf>> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(src).unwrap() {
        let path = entry.unwrap().path();
        let Some(stem) = path.file_stem().and_then(|s| s.to_str()).map(str::to_owned) else { continue };
        if stem == "lib" {
            continue;
        }
        let mut files = Vec::new();
        source_files(&path, &mut files);
        if !files.is_empty() {
            out.entry(stem).or_insert_with(Vec::new).extend(files);
        }
    }
    out
}

/// The `crate::` paths of a file's code, as (first segment, line number).
fn crate_paths(text: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(at) = rest.find("crate::") {
            let after = &rest[at + "crate::".len()..];
            let name: String = after.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            out.push((name, number + 1));
            rest = after;
        }
    }
    out
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = modules(&src);
    let layer_of: BTreeMap<&str, usize> =
        LAYERS.iter().enumerate().flat_map(|(i, names)| names.iter().map(move |n| (*n, i))).collect();
    let unplaced: Vec<&String> = modules.keys().filter(|m| !layer_of.contains_key(m.as_str())).collect();
    assert!(unplaced.is_empty(), "modules missing from LAYERS (place each in a layer): {unplaced:?}");

    let mut wrong = BTreeSet::new();
    for (module, files) in &modules {
        let own = layer_of[module.as_str()];
        for file in files {
            let text = std::fs::read_to_string(file).unwrap();
            for (name, line) in crate_paths(&text) {
                if name == *module || name == "Error" || name == "Result" {
                    continue;
                }
                let shown =
                    format!("{}:{line}: {module} imports crate::{name}", file.strip_prefix(&src).unwrap().display());
                match layer_of.get(name.as_str()) {
                    Some(&layer) if layer < own => {}
                    Some(_) => {
                        wrong.insert(format!("{shown} (a module of the same or a higher layer)"));
                    }
                    None => {
                        wrong.insert(format!("{shown} (a crate-root re-export: name the module it lives in)"));
                    }
                }
            }
        }
    }
    assert!(wrong.is_empty(), "imports against the layers:\n{}", wrong.into_iter().collect::<Vec<_>>().join("\n"));
}

#[test]
fn the_check_sees_imports_in_code_only() {
    let text = "use crate::io::IoScheduler;\n/// [`x`](crate::read::X)\nlet a = crate::Error::internal(\"\"); // crate::dataset\n";
    let names: Vec<String> = crate_paths(text).into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, ["io", "Error"]);
}
