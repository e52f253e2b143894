//! A guest on the holder socket that sends requests and never reads their answers
//! cannot grow the holder: past its own 32 MiB budget its requests wait unread, the
//! holder's own client is served meanwhile, and the guest is served again as it reads.

mod common;

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;

use common::fake_env;
use serde_json::{Value, json};

#[test]
fn a_guest_that_does_not_read_stops_being_read_past_its_budget() {
    let (env, _fake) = fake_env(json!({}));
    let (mut editor, id) = env.with_chat();
    // One answer is a little over 1 MiB: 1,000 of them would be 1 GiB queued.
    let big = "0123456789abcdef".repeat(65_536);
    editor.ok(json!({"action": "context_add", "path": "big.txt", "content": big}));

    let mut guest = UnixStream::connect(env.chat_dir(&id).join("holder.sock")).unwrap();
    guest.set_nonblocking(true).unwrap();
    // One line per write, each long (a padded request id), so that room in the socket
    // follows closely what the holder has read rather than its read buffer's size.
    let pad = "p".repeat(16_000);
    let requests: Vec<Vec<u8>> = (0..1_000)
        .map(|i| {
            let line = json!({"action": "get_context_file", "path": "big.txt",
                              "request_id": format!("g{i}-{pad}")});
            format!("{line}\n").into_bytes()
        })
        .collect();
    // Writes until the holder has stopped reading: the socket stays full through 50
    // rounds of a ping and a short pause (a holder that still reads frees room in
    // that time; a busy machine can only make it look stopped sooner, never grown).
    let (mut sent, mut offset) = (0, 0);
    let mut stalled = 0;
    while stalled < 50 {
        match guest.write(&requests[sent][offset..]) {
            Ok(n) => {
                offset += n;
                if offset == requests[sent].len() {
                    (sent, offset) = (sent + 1, 0);
                }
                stalled = 0;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {
                // The holder's own client is still served while the guest waits.
                editor.ok(json!({"action": "ping"}));
                std::thread::sleep(std::time::Duration::from_millis(50));
                stalled += 1;
            }
            Err(e) => panic!("{e}"),
        }
        // The budget holds about 32 answers; the socket, the holder's read buffer
        // and its request queue a few dozen requests more.
        assert!(
            sent < 200,
            "the holder kept reading a guest that reads nothing ({sent} requests)"
        );
    }

    // Reading answers lets the guest's waiting requests through, in order: every one
    // it wrote, more than the budget held.
    guest.set_nonblocking(false).unwrap();
    // The line the full socket cut off (or the next one) goes once the holder reads.
    let rest = requests[sent][offset..].to_vec();
    let mut writer = guest.try_clone().unwrap();
    let finishing = std::thread::spawn(move || writer.write_all(&rest).unwrap());
    let answers = sent + 1;
    let mut reader = BufReader::new(guest);
    for next in 0..answers {
        let mut line = String::new();
        assert!(
            reader.read_line(&mut line).unwrap() > 0,
            "the holder hung up"
        );
        let m: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(m["type"], "file_content", "{m}");
        assert_eq!(m["request_id"], format!("g{next}-{pad}"));
    }
    finishing.join().unwrap();
}
