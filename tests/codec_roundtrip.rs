//! Property test: packing then expanding any generated log gives back the
//! same log, under both JSONL and SQLite limits, for random runs, broken
//! runs, unknown fields, odd key orders, huge and negative time gaps and
//! escaped text: every event byte for byte, except that a packed delta
//! whose keys came in another order reads back in the original's canonical
//! order (it packs by key *set*, as the original does).

mod support;

use dsh_persist::codec::chunk_rows::{PackLimits, Record, pack};
use dsh_persist::model::event::Event;
use dsh_persist::model::json::{self, MAX_SAFE_INTEGER};
use support::rng::Rng;

const TEXTS: [&str; 8] = [
    "",
    "a",
    " the",
    "é🚀",
    "q\"uote\\",
    "nl\nx",
    "\u{1}\u{1f}",
    "</script>",
];

fn chunk_data(
    rng: &mut Rng,
    kind: u64,
    turn: &str,
    step: &str,
    index: &str,
    id: &str,
    name: Option<&str>,
) -> String {
    let text = json::quote(rng.pick(&TEXTS));
    match kind {
        0 => format!(
            r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"text-delta","index":{index},"text":{text}}}}}"#
        ),
        1 => format!(
            r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"reasoning-delta","index":{index},"text":{text}}}}}"#
        ),
        _ => {
            let n = name
                .map(|n| format!(r#","name":{}"#, json::quote(n)))
                .unwrap_or_default();
            format!(
                r#"{{"turn":{turn},"step":{step},"chunk":{{"type":"tool-call-delta","index":{index},"id":{}{n},"argumentsDelta":{text}}}}}"#,
                json::quote(id)
            )
        }
    }
}

fn generate(rng: &mut Rng, len: usize) -> Vec<Event> {
    let mut events = Vec::with_capacity(len);
    let mut time: i64 = rng.below(2_000_000) as i64 - 1_000_000;
    let (mut kind, mut turn, mut step, mut index) = (0u64, "1", "1", "0");
    let mut id = "call_1";
    let mut name: Option<&str> = None;
    for seq in 0..len as u64 {
        // Occasionally change what a run shares.
        if rng.below(8) == 0 {
            kind = rng.below(3);
        }
        if rng.below(20) == 0 {
            turn = rng.pick(&["1", "2", "7"]);
        }
        if rng.below(20) == 0 {
            step = rng.pick(&["1", "3"]);
        }
        if rng.below(15) == 0 {
            index = rng.pick(&["0", "1", "12"]);
        }
        if rng.below(10) == 0 {
            id = rng.pick(&["call_1", "c~2", "\u{e9}"]);
        }
        if rng.below(6) == 0 {
            name = [None, Some("bash"), Some("read_file")][rng.below(3) as usize];
        }
        // Time gaps: mostly small, sometimes negative, sometimes huge.
        time = match rng.below(20) {
            0 => MAX_SAFE_INTEGER - rng.below(3) as i64,
            1 => -MAX_SAFE_INTEGER + rng.below(3) as i64,
            2..=4 => (time - rng.below(50) as i64).max(-MAX_SAFE_INTEGER),
            _ => time
                .saturating_add(rng.below(80) as i64)
                .min(MAX_SAFE_INTEGER),
        };
        let line = match rng.below(14) {
            // an event that breaks a run
            0 => format!(
                r#"{{"type":"turn/start","seq":{seq},"time":{time},"data":{{"turn":{turn}}}}}"#
            ),
            // unknown chunk fields
            1 => format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"turn":{turn},"step":{step},"chunk":{{"type":"text-delta","index":0,"text":"x","extra":1}}}}}}"#
            ),
            // unusual envelope key order
            2 => format!(
                r#"{{"seq":{seq},"type":"assistant/chunk","time":{time},"data":{}}}"#,
                chunk_data(rng, kind, turn, step, index, id, name)
            ),
            // ignorable delta
            3 => format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{},"ignorable":true}}"#,
                chunk_data(rng, kind, turn, step, index, id, name)
            ),
            // data keys in another order
            4 => format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"step":{step},"turn":{turn},"chunk":{{"type":"text-delta","index":0,"text":"z"}}}}}}"#
            ),
            // a non-delta chunk
            5 => format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{{"turn":{turn},"step":{step},"chunk":{{"type":"usage","usage":{{"inputTokens":3}}}}}}}}"#
            ),
            _ => format!(
                r#"{{"type":"assistant/chunk","seq":{seq},"time":{time},"data":{}}}"#,
                chunk_data(rng, kind, turn, step, index, id, name)
            ),
        };
        events.push(Event::parse(&line).unwrap_or_else(|e| panic!("{line}: {e}")));
    }
    events
}

#[test]
fn pack_then_expand_is_identity() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut rows = 0;
    for round in 0..400 {
        let len = 1 + rng.below(if round % 50 == 0 { 3000 } else { 120 }) as usize;
        let log = generate(&mut rng, len);
        for limits in [
            PackLimits::JSONL,
            PackLimits::SQLITE,
            PackLimits {
                max_members: 4,
                max_data_bytes: 200,
            },
        ] {
            let records = pack(&log, &limits);
            let mut back = Vec::with_capacity(log.len());
            for r in &records {
                if let Record::Packed(p) = r {
                    rows += 1;
                    assert!(
                        p.member_count() >= 3 && p.member_count() as usize <= limits.max_members
                    );
                    assert!(p.data_json().len() <= limits.max_data_bytes);
                }
                // Through text, as storage does.
                let mut line = String::new();
                r.write_json(&mut line);
                Record::parse_line(&line)
                    .unwrap_or_else(|e| panic!("round {round}: {line}: {e}"))
                    .into_events(&mut back);
            }
            assert_eq!(back.len(), log.len(), "round {round}");
            for (a, b) in back.iter().zip(&log) {
                let (ta, tb) = (a.to_json(), b.to_json());
                if ta != tb {
                    // Only a reordered delta may differ, and only in order.
                    assert!(
                        b.event_type() == "assistant/chunk"
                            && dsh_persist::model::fields::json_equal(&ta, &tb),
                        "round {round}: {ta} vs {tb}"
                    );
                }
            }
        }
    }
    assert!(rows > 1000, "the generator produced too few runs ({rows})");
}
