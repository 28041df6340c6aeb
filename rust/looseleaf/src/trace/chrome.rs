//! Export of a [`TraceSnapshot`] as Chrome's Trace Event Format (the JSON object form:
//! `{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}`), which Perfetto and
//! `chrome://tracing` open.
//!
//! Layout: one process (`pid` 1) named after the file. Spans are complete events (`X`) on
//! threads named by lane, one per lane and recording thread (`tid` = lane base + thread number),
//! since spans of one lane may overlap across threads (a filtered read's sub-reads); spans of
//! one thread of one lane nest or follow each other, as complete events must. Storage reads and
//! indirect steps overlap each other freely and are async events (`b`/`e`, one `id` each): a
//! read is a `queued` slice (queued → issued) followed by a `read` slice (issued → completed).
//! Counters (`C`): the bytes reserved in the I/O buffer (and the budget), the reads in flight.

use serde_json::{Value, json};

use super::{Lane, SpanKind, TraceSnapshot};

const PID: u64 = 1;

/// The `tid` of `lane` on recording thread `thread`.
fn tid(lane: Lane, thread: u32) -> u64 {
    let base = match lane {
        Lane::Scheduling => 1000,
        Lane::Indirect => 2000,
        Lane::DecodeLoop => 3000,
        Lane::Decode => 4000,
        Lane::Consumer => 5000,
    };
    base + u64::from(thread)
}

fn span_args(kind: SpanKind) -> Value {
    match kind {
        SpanKind::SchedulingLoop | SpanKind::WaitForRoom => json!({}),
        SpanKind::SchedulePage { priority } => json!({ "priority": priority }),
        SpanKind::Indirect { column, priority } => json!({ "column": column, "priority": priority }),
        SpanKind::WaitForPages { step, rows } | SpanKind::Decode { step, rows } => {
            json!({ "step": step, "rows": rows })
        }
        SpanKind::Batch { index, rows, bytes } => json!({ "batch": index, "rows": rows, "bytes": bytes }),
    }
}

/// See the module documentation.
pub(super) fn to_chrome_json(trace: &TraceSnapshot) -> String {
    let mut events: Vec<Value> = Vec::new();
    let process = match &trace.info.location {
        Some(location) => format!("looseleaf read of {location}"),
        None => "looseleaf read".to_string(),
    };
    events.push(json!({ "ph": "M", "pid": PID, "tid": 0, "name": "process_name", "args": { "name": process } }));
    // Thread names, once per (lane, thread) used.
    let mut named: Vec<(Lane, u32)> =
        trace.spans.iter().filter(|s| s.kind.lane() != Lane::Indirect).map(|s| (s.kind.lane(), s.thread)).collect();
    named.sort_unstable();
    named.dedup();
    for (lane, thread) in named {
        let tid = tid(lane, thread);
        let name = format!("{} (thread {thread})", lane.name());
        events.push(json!({ "ph": "M", "pid": PID, "tid": tid, "name": "thread_name", "args": { "name": name } }));
        events.push(
            json!({ "ph": "M", "pid": PID, "tid": tid, "name": "thread_sort_index", "args": { "sort_index": tid } }),
        );
    }
    let mut next_id: u64 = 1;
    for span in &trace.spans {
        let name = span.kind.name();
        let args = span_args(span.kind);
        if span.kind.lane() == Lane::Indirect {
            let id = next_id;
            next_id += 1;
            let tid = tid(Lane::Indirect, span.thread);
            events.push(json!({ "ph": "b", "cat": "indirect", "name": name, "id": id, "pid": PID, "tid": tid, "ts": span.start, "args": args }));
            events.push(
                json!({ "ph": "e", "cat": "indirect", "name": name, "id": id, "pid": PID, "tid": tid, "ts": span.end }),
            );
            continue;
        }
        events.push(json!({
            "ph": "X",
            "cat": span.kind.lane().name(),
            "name": name,
            "pid": PID,
            "tid": tid(span.kind.lane(), span.thread),
            "ts": span.start,
            "dur": span.end - span.start,
            "args": args,
        }));
    }
    for read in &trace.reads {
        let id = next_id;
        next_id += 1;
        let args = json!({
            "request": read.request,
            "read": read.index,
            "column": read.column,
            "priority": read.priority,
            "kind": if read.known { "direct" } else { "indirect" },
            "offset": read.range.start,
            "end": read.range.end,
            "bytes": read.num_bytes(),
            "bypassed_budget": read.bypassed,
            "urgent": read.urgent,
            "failed": read.failed,
        });
        let issued = read.issued.unwrap_or(read.queued);
        events.push(json!({ "ph": "b", "cat": "io.queue", "name": "queued", "id": id, "pid": PID, "tid": 0, "ts": read.queued, "args": args }));
        events.push(
            json!({ "ph": "e", "cat": "io.queue", "name": "queued", "id": id, "pid": PID, "tid": 0, "ts": issued }),
        );
        let Some(completed) = read.completed.filter(|_| read.issued.is_some()) else { continue };
        let name = format!("read c{} {} B", read.column, read.num_bytes());
        events.push(
            json!({ "ph": "b", "cat": "io", "name": name, "id": id, "pid": PID, "tid": 0, "ts": issued, "args": args }),
        );
        events.push(json!({ "ph": "e", "cat": "io", "name": name, "id": id, "pid": PID, "tid": 0, "ts": completed }));
    }
    let budget = trace.info.io_buffer_bytes;
    for sample in &trace.budget {
        let mut buffer = json!({ "reserved": sample.reserved_bytes });
        if let (Some(budget), Some(map)) = (budget, buffer.as_object_mut()) {
            map.insert("budget".into(), budget.into());
        }
        events.push(
            json!({ "ph": "C", "pid": PID, "tid": 0, "name": "I/O buffer (bytes)", "ts": sample.at, "args": buffer }),
        );
        events.push(json!({ "ph": "C", "pid": PID, "tid": 0, "name": "reads in flight", "ts": sample.at, "args": { "reads": sample.reads_in_flight } }));
    }
    let info = json!({
        "location": trace.info.location,
        "io_buffer_bytes": trace.info.io_buffer_bytes,
        "io_depth": trace.info.io_depth,
    });
    json!({ "traceEvents": events, "displayTimeUnit": "ms", "otherData": info }).to_string()
}
