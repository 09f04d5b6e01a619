//! Symbolic links and a JSONL root (D5, D13, B 16): links planted inside
//! the root are refused, never followed (nothing is written outside the
//! root); a root that is itself a link works; a header cwd whose project
//! directory is a link to the real one reads like the original, and writes
//! go to the real file.

mod support;

use std::os::unix::fs::symlink;
use std::path::Path;

use dsh_persist::ErrorKind;
use dsh_persist::model::header::SessionHeader;
use dsh_persist::store::{AppendOptions, Store};
use support::TempDir;

fn open(root: &Path, compression: &str) -> Store {
    Store::open_json(&format!(
        r#"{{"backend":"jsonl","root":{},"compression":"{compression}","writeBatchMaxDelayMs":0}}"#,
        serde_json::to_string(root).unwrap()
    ))
    .unwrap()
}

const TURN: &str = r#"[{"type":"turn/start","seq":0,"time":1,"data":{"turn":1}},{"type":"turn/end","seq":1,"time":1,"data":{"turn":1,"reason":{"kind":"completed"}}}]"#;

fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().display().to_string());
            }
        }
    }
    out
}

fn refused_as_link(e: dsh_persist::Error, link: &Path) {
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    let text = e.to_string();
    assert!(
        text.contains("is a symbolic link inside the JSONL root"),
        "{text}"
    );
    assert!(text.contains(&link.display().to_string()), "{text}");
}

#[test]
fn planted_links_are_refused_and_nothing_is_written_outside() {
    for compression in ["zstd", "none"] {
        let dir = TempDir::new(&format!("planted-{compression}"));
        let outside = dir.path().join("OUTSIDE");
        std::fs::create_dir_all(outside.join("target2")).unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("_no-cwd")).unwrap();
        let project = root.join("--w--");
        symlink(&outside, &project).unwrap();
        let session = root.join("_no-cwd").join("victim2");
        symlink(outside.join("target2"), &session).unwrap();
        let store = open(&root, compression);
        // A live session under the planted project directory.
        let mut h = SessionHeader::new("victim1", 1);
        h.cwd = Some("/w".into());
        let live = store.start(h).unwrap();
        live.append("turn/start", r#"{"turn":1}"#, &AppendOptions::default())
            .unwrap();
        refused_as_link(live.flush().unwrap_err(), &project);
        drop(live);
        // A planted session directory: refused at once.
        refused_as_link(
            store.start(SessionHeader::new("victim2", 1)).err().unwrap(),
            &session,
        );
        refused_as_link(store.load("victim2").unwrap_err(), &session);
        // A store-level create + append.
        let mut h = SessionHeader::new("victim3", 1);
        h.cwd = Some("/w".into());
        store.create(h).unwrap();
        refused_as_link(store.append_json("victim3", TURN).unwrap_err(), &project);
        assert_eq!(files_under(&outside), Vec::<String>::new(), "{compression}");
        // The rest of the root works, and a listing skips the links.
        store.create(SessionHeader::new("fine", 1)).unwrap();
        store.append_json("fine", TURN).unwrap();
        let ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
        assert_eq!(ids, ["fine"]);
        // A log file that is a link is refused too.
        let real_log = files_under(&root.join("_no-cwd").join("fine"));
        let fake = root.join("_no-cwd").join("fake");
        std::fs::create_dir(&fake).unwrap();
        let name = Path::new(&real_log[0]).file_name().unwrap();
        symlink(&real_log[0], fake.join(name)).unwrap();
        refused_as_link(store.load("fake").unwrap_err(), &fake.join(name));
    }
}

#[test]
fn a_root_that_is_a_link_works_and_new_directories_are_0700() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("root-link");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let link = dir.path().join("root");
    symlink(&real, &link).unwrap();
    let store = open(&link, "zstd");
    let mut h = SessionHeader::new("s", 1);
    h.cwd = Some("/p".into());
    store.create(h).unwrap();
    store.append_json("s", TURN).unwrap();
    assert_eq!(store.load("s").unwrap().events.len(), 2);
    let session = real.join("--p--").join("s");
    assert!(session.join("session.jsonl.zstd").is_file());
    for d in [real.join("--p--"), session] {
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }
    // A root created by the store: mkdir -p, 0700.
    let deep = dir.path().join("a").join("b");
    open(&deep, "none");
    assert_eq!(
        std::fs::metadata(&deep).unwrap().permissions().mode() & 0o777,
        0o700
    );
}

#[test]
fn a_symlinked_project_alias_reads_and_writes_go_to_the_real_file() {
    // DIFFERENCES B 16 (repro/16-symlinked-project-alias.cjs).
    let dir = TempDir::new("alias");
    let root = dir.path().join("root");
    let store = open(&root, "none");
    let mut h = SessionHeader::new("physical-alias", 1000);
    h.cwd = Some("/stored".into());
    store.create(h.clone()).unwrap();
    store.append_json("physical-alias", TURN).unwrap();
    store.close().unwrap();
    let file = root
        .join("--stored--")
        .join("physical-alias")
        .join("session.jsonl");
    symlink(root.join("--stored--"), root.join("--alias--")).unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let (first, rest) = text.split_once('\n').unwrap();
    let first = first.replace(r#""cwd":"/stored""#, r#""cwd":"/alias""#);
    std::fs::write(&file, format!("{first}\n{rest}")).unwrap();
    let store = open(&root, "none");
    let view = store.load("physical-alias").unwrap();
    assert_eq!(view.header.cwd.as_deref(), Some("/alias"));
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["physical-alias"]);
    // An append writes the real file, not through the link.
    store
        .append_json(
            "physical-alias",
            r#"[{"type":"turn/start","seq":2,"time":1,"data":{"turn":2}}]"#,
        )
        .unwrap();
    assert_eq!(store.inspect("physical-alias").unwrap().events.len(), 3 + 1);
    assert!(
        std::fs::read_to_string(&file)
            .unwrap()
            .contains(r#""seq":2"#)
    );
    // A delete removes the real session directory; the alias link stays.
    store.delete("physical-alias").unwrap();
    assert!(!file.exists());
    assert!(root.join("--alias--").is_symlink());
    assert_eq!(store.list().unwrap().len(), 0);
}

#[test]
fn a_link_in_place_of_the_trash_is_refused_and_nothing_moves_outside() {
    let dir = TempDir::new("trash-link");
    let outside = dir.path().join("OUTSIDE");
    std::fs::create_dir(&outside).unwrap();
    let root = dir.path().join("root");
    let store = open(&root, "zstd");
    for id in ["a", "b"] {
        store.create(SessionHeader::new(id, 1)).unwrap();
        store.append_json(id, TURN).unwrap();
    }
    let trash = root.join(".dsh-persist-trash");
    symlink(&outside, &trash).unwrap();
    refused_as_link(store.delete("a").unwrap_err(), &trash);
    assert_eq!(files_under(&outside), Vec::<String>::new());
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert_eq!(store.inspect("a").unwrap().events.len(), 2, "still there");
    // Removed, as the message says: deletes work again.
    std::fs::remove_file(&trash).unwrap();
    store.delete("a").unwrap();
    let ids: Vec<String> = store.list().unwrap().into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["b"]);
    assert!(std::fs::symlink_metadata(&trash).unwrap().is_dir());
}
