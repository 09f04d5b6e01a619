//! The reading subcommands: `list`, `snapshots`, `load`, `inspect`,
//! `read-from`, `raw`.

use dsh_persist::Error;
use dsh_persist::model::session_list::{HeaderRef, write_headers_array};
use dsh_persist::store::{SessionView, Store};

use super::output::{Outcome, iso_time, jstr, print_out, table};

/// `list`: JSON array of headers, or a table.
pub fn list(store: &Store, json: bool) -> Result<Outcome, Error> {
    let list = store.listing()?;
    let mut headers: Vec<HeaderRef<'_>> = list.iter().collect();
    headers.sort_by(|a, b| a.id.cmp(b.id));
    if json {
        let mut out = String::new();
        write_headers_array(&mut out, headers.iter().copied());
        print_out(&out);
    } else {
        let rows: Vec<Vec<String>> = headers.iter().map(header_row).collect();
        print_out(&table(&["ID", "CREATED", "CWD", "PARENT", "SEED"], &rows));
        print_out(&format!("{} session(s)", headers.len()));
    }
    Ok(Outcome::ok())
}

fn header_row(h: &HeaderRef<'_>) -> Vec<String> {
    vec![
        h.id.to_owned(),
        iso_time(h.created_at as i64),
        h.cwd.map_or_else(|| "-".into(), |c| shorten(c, 60)),
        h.parent_session.unwrap_or("-").to_owned(),
        h.seed_length.map_or_else(|| "-".into(), |n| n.to_string()),
    ]
}

/// `text` cut to `max` characters with an ellipsis in the middle.
fn shorten(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max {
        return text.to_string();
    }
    let head: String = text.chars().take(max / 2 - 1).collect();
    let tail: String = text.chars().skip(n - (max - max / 2)).collect();
    format!("{head}…{tail}")
}

/// `snapshots`: `[{header, revision}]`, or a table.
pub fn snapshots(store: &Store, json: bool) -> Result<Outcome, Error> {
    let mut snaps = store.list_snapshots()?;
    snaps.sort_by(|a, b| a.0.id.cmp(&b.0.id));
    if json {
        let items: Vec<String> = snaps
            .iter()
            .map(|(h, r)| format!("{{\"header\":{},\"revision\":{}}}", h.to_json(), jstr(&r.0)))
            .collect();
        print_out(&format!("[{}]", items.join(",")));
    } else {
        let rows: Vec<Vec<String>> = snaps
            .iter()
            .map(|(h, r)| vec![h.id.clone(), iso_time(h.created_at as i64), r.0.clone()])
            .collect();
        print_out(&table(&["ID", "CREATED", "REVISION"], &rows));
    }
    Ok(Outcome::ok())
}

/// `load ID`: commits the repair, prints `{meta, events}`.
pub fn load(store: &Store, id: &str, json: bool) -> Result<Outcome, Error> {
    print_view(&store.load(id)?, json);
    Ok(Outcome::ok())
}

/// `inspect ID`: read-only balanced view.
pub fn inspect(store: &Store, id: &str, json: bool) -> Result<Outcome, Error> {
    print_view(&store.inspect(id)?, json);
    Ok(Outcome::ok())
}

/// `read-from ID SEQ`: stored events with `seq >= SEQ`.
pub fn read_from(store: &Store, id: &str, seq: i64, json: bool) -> Result<Outcome, Error> {
    print_view(&store.read_from(id, seq)?, json);
    Ok(Outcome::ok())
}

/// `raw ID`: `{meta, filename, content}`, or the decoded text itself.
pub fn raw(store: &Store, id: &str, json: bool) -> Result<Outcome, Error> {
    if !store.supports_raw_artifacts() {
        return Err(Error::Unsupported(
            "raw works on JSONL stores only; a SQLite store keeps no log file (use read-from ID 0)"
                .into(),
        ));
    }
    let art = store
        .read_raw(id)?
        .ok_or_else(|| Error::not_found(format!("session {} not found", jstr(id))))?;
    if json {
        print_out(&format!(
            "{{\"meta\":{},\"filename\":{},\"content\":{}}}",
            art.header.to_json(),
            jstr(&art.filename),
            jstr(&art.content)
        ));
    } else {
        use std::io::Write;
        super::progress::clear_all();
        let _ = std::io::stdout().lock().write_all(art.content.as_bytes());
    }
    Ok(Outcome::ok())
}

/// `{meta, events}` JSON, or a header summary and one line per event.
fn print_view(view: &SessionView, json: bool) {
    if json {
        print_out(&view.to_json());
        return;
    }
    let h = &view.header;
    let mut out = format!(
        "session {}  created {}  cwd {}\n",
        jstr(&h.id),
        iso_time(h.created_at as i64),
        h.cwd.as_deref().unwrap_or("-")
    );
    if let Some(p) = &h.parent_session {
        out.push_str(&format!(
            "parent {}  seed length {}\n",
            jstr(p),
            h.seed_length.map_or_else(|| "-".into(), |n| n.to_string())
        ));
    }
    out.push_str(&format!("{} event(s)\n", view.events.len()));
    let width = view.events.last().map_or(1, |e| e.seq.to_string().len());
    for e in &view.events {
        out.push_str(&format!(
            "{:>width$}  {}  {:<18}  {}",
            e.seq,
            iso_time(e.time),
            e.type_str(),
            e.data.as_str()
        ));
        if let Some(op) = &e.surface_op() {
            out.push_str(&format!("  surfaceOp={}", op.as_str()));
        }
        if let Some(s) = &e.source_event_seqs() {
            out.push_str(&format!("  sourceEventSeqs={}", s.as_str()));
        }
        if e.ignorable {
            out.push_str("  ignorable");
        }
        out.push('\n');
    }
    print_out(&out);
}
