//! A command that only reads, run while the chat is held by a `bb7 ask` that printed
//! its answer and is ending (its title still being made), gets its answer, not
//! "bb7 stopped": it joins the ending holder, which quits under it, and runs again on
//! its own (docs/PROTOCOL.md, "One chat, many front-ends"). Seen in the Kakoune screen
//! test, whose `:bb7-review` follows `:bb7-ask` at once.

mod cli_support;
mod common;

use std::io::Read;
use std::time::Duration;

use cli_support::*;
use common::fake_env;
use common::fake_model::*;
use serde_json::json;

#[test]
fn review_while_the_asking_process_makes_its_title() {
    let (env, fake) = fake_env(json!({}));
    project_with(&env, &[("f.txt", TEN)]);
    two_hunks(&fake);
    let title = br#"{"id":"t","choices":[{"index":0,"message":{"role":"assistant","content":"A title"},"finish_reason":"stop"}]}"#;
    let body = title.to_vec();
    fake.set_fallback(Box::new(move |rec| {
        (rec.body["stream"] != true).then(|| Reply::Raw {
            pieces: vec![
                format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                    body.len()
                )
                .into_bytes(),
                body.clone(),
            ],
            // Longer than the ending process waits for it: the title never comes.
            pause: Duration::from_secs(60),
        })
    }));
    let mut ask = spawn(&env, &env.project, &["ask", "change", "it"]);
    let mut out = ask.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !lossy(&seen).contains("Two changes.") {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "{}", lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    let o = bb7(&env, &["review"]);
    assert!(o.status.success(), "{}{}", stdout(&o), stderr(&o));
    assert_eq!(hunk_ids(&stdout(&o)).len(), 2, "{}", stdout(&o));
    assert!(common::wait_with_timeout(&mut ask).success());
}
