//! `convert`: copies every session of one store into another, the logical
//! log preserved byte for byte.
//!
//! The source is read with `inspect`, never `load`, so it is never modified:
//! a session that ends in an open turn or a torn tail is copied as its
//! balanced log (the stored events plus the closers a load would append),
//! which is exactly what loading the source would return.
//!
//! Steps:
//! 1. every source session is inspected once (a session that fails to read
//!    stops the conversion before anything is written) and every id is
//!    checked against the target: if any id already exists there, the whole
//!    conversion fails with a conflict and nothing is written;
//! 2. each session is created in the target and its whole events appended
//!    (each event keeps its key order and data bytes);
//! 3. each copy is inspected back from the target and compared with the
//!    source: the header and every event's JSON text must be equal byte for
//!    byte. One exception, by the nature of SQLite: a SQLite store keeps the
//!    envelope in columns, not its key order, and rebuilds every event in the
//!    live order (`type, seq, time, data, sourceEventSeqs, surfaceOp,
//!    ignorable`). Synthetic closers are written with `surfaceOp` before
//!    `sourceEventSeqs`, so for a SQLite target each source event is
//!    compared in the live key order; `data` and every field value must
//!    still be equal byte for byte.

use std::collections::HashSet;

use dsh_persist::Error;
use dsh_persist::model::event::KeyOrder;
use dsh_persist::model::json::quote;
use dsh_persist::store::{SessionView, Store};

use super::args::{StoreArgs, TargetArgs};
use super::output::{Outcome, print_out};
use super::progress::Progress;
use super::stores::Selection;

/// Runs `convert` and prints `{converted: N}`.
pub fn convert(source: &StoreArgs, target: &TargetArgs, json: bool) -> Result<Outcome, Error> {
    let src_sel = Selection::from_store_args(source)?;
    // A server is reached (and may time out) already here.
    let listing = Progress::spinner("convert", &opening(&src_sel, "the source"));
    src_sel.check_exists()?;
    let target_sel = Selection::from_target_args(target, source.postgres_schema.as_ref())?;
    if src_sel.same_store(&target_sel) {
        return Err(Error::invalid(format!(
            "convert target {} is the source store",
            quote(&target_sel.describe())
        )));
    }
    listing.message(|| "listing the source sessions".to_string());
    let src = src_sel.open()?;
    let mut headers = src.list()?;
    listing.finish();
    headers.sort_by(|a, b| a.id.cmp(&b.id));
    let total = headers.len() as u64;

    // 1. Read every session once and check the target for existing ids.
    let progress = Progress::bar("convert: checking", total);
    for h in &headers {
        progress.message(|| h.id.clone());
        let view = src
            .inspect(&h.id)
            .map_err(|e| e.context(&format!("cannot convert session {}", quote(&h.id))))?;
        if view.events.is_empty() {
            return Err(Error::invalid(format!(
                "cannot convert session {}: it has no events (a store materializes a session with its first event)",
                quote(&h.id)
            )));
        }
        progress.inc(1);
    }
    // The row stores keep the envelope in columns, not its key order.
    let target_keeps_key_order = target_sel.keeps_key_order();
    let opening_target = Progress::spinner("convert", &opening(&target_sel, "the target"));
    let dst = target_sel.open()?;
    let existing: HashSet<String> = dst.list()?.into_iter().map(|h| h.id).collect();
    opening_target.finish();
    let clashes: Vec<String> = headers
        .iter()
        .filter(|h| existing.contains(&h.id))
        .map(|h| quote(&h.id))
        .collect();
    if !clashes.is_empty() {
        return Err(Error::conflict(format!(
            "convert refuses to overwrite: the target already holds session(s) {}; nothing was written",
            clashes.join(", ")
        )));
    }

    // 2 + 3. Copy, then read the copy back and compare.
    progress.phase(|| "convert: copying".to_string(), String::new, total);
    for h in &headers {
        progress.message(|| h.id.clone());
        let view = src.inspect(&h.id)?;
        copy_session(&dst, &view)?;
        let copy = dst.inspect(&h.id)?;
        compare(&view, &copy, target_keeps_key_order)?;
        progress.inc(1);
    }
    dst.close()?;
    src.close()?;
    progress.finish();
    if json {
        print_out(&format!("{{\"converted\":{}}}", headers.len()));
    } else {
        print_out(&format!(
            "converted {} session(s) into {} store {}; every copy verified byte for byte",
            headers.len(),
            target_sel.kind_name(),
            target_sel.describe()
        ));
    }
    Ok(Outcome::ok())
}

/// A spinner's text while a store is opened: a server is named, since
/// connecting to it can take a while.
fn opening(sel: &Selection, which: &str) -> String {
    match sel {
        Selection::Postgres(..) => format!("connecting to {}", sel.describe()),
        _ => format!("opening {which}"),
    }
}

fn copy_session(dst: &Store, view: &SessionView) -> Result<(), Error> {
    let id = &view.header.id;
    dst.create(view.header.clone())?;
    dst.append(id, view.events.clone())
        .map_err(|e| e.context(&format!("cannot write session {} to the target", quote(id))))
}

/// The copy must equal the source: header JSON and each event's text (in the
/// live key order when the target keeps no key order).
fn compare(src: &SessionView, copy: &SessionView, keeps_key_order: bool) -> Result<(), Error> {
    let id = quote(&src.header.id);
    if src.header.to_json() != copy.header.to_json() {
        return Err(Error::invariant(format!(
            "converted session {id}: header differs after the copy ({} vs {})",
            src.header.to_json(),
            copy.header.to_json()
        )));
    }
    if src.events.len() != copy.events.len() {
        return Err(Error::invariant(format!(
            "converted session {id}: {} events in the source, {} in the copy",
            src.events.len(),
            copy.events.len()
        )));
    }
    let mut a = String::new();
    let mut b = String::new();
    for (x, y) in src.events.iter().zip(&copy.events) {
        a.clear();
        b.clear();
        if keeps_key_order {
            x.write_json(&mut a);
        } else {
            let mut live = x.clone();
            live.key_order = KeyOrder::LIVE;
            live.write_json(&mut a);
        }
        y.write_json(&mut b);
        if a != b {
            return Err(Error::invariant(format!(
                "converted session {id}: event seq {} differs after the copy:\n  source: {a}\n  copy:   {b}",
                x.seq
            )));
        }
    }
    Ok(())
}
