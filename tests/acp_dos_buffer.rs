//! An apply to a CRLF file open in a Neovim buffer through codecompanion.nvim: its
//! `fs/write_text_file` splits the text on `\n` into the buffer's lines and saves the
//! buffer, which (`fileformat=dos`) ends every line with CRLF of its own. CRLF text
//! would land as `\r\r\n` with an empty last line (checked in Neovim 0.11:
//! `nvim_buf_set_lines` with lines ending in `\r`, then `:update`); bb7 writes LF
//! text then, so the file keeps its CRLF line ends exactly, and `/undo` restores it.

mod acp_support;
mod common;

use acp_support::*;
use common::fake_env;
use serde_json::json;

/// What codecompanion's write into an open `fileformat=dos` buffer saves: each
/// `\n`-separated piece as a line, each line ended by CRLF.
fn dos_buffer_saves(s: &str) -> String {
    s.split('\n').map(|l| format!("{l}\r\n")).collect()
}

const BEFORE: &str = "alpha\r\nbeta\r\ngamma\r\n";

#[test]
fn an_apply_to_a_crlf_file_in_a_dos_buffer_keeps_its_line_ends_and_undo_restores_it() {
    let (env, fake) = fake_env(json!({}));
    env.write("a.txt", BEFORE);
    writes(&fake, "a.txt", "alpha\nBETA\ngamma\n");
    let ed = Editor::new(true);
    ed.script(|s| s.write_rewrite = Some(dos_buffer_saves));
    let a = env.project.join("a.txt");
    rt().block_on(run(&env.home, &env.project, &ed, async |cx, _| {
        let sid = new_session(&cx, &env.project).await?;
        prompt(
            &cx,
            &sid,
            vec![link(&file_uri(&a), "a.txt"), say("Uppercase beta")],
        )
        .await?;
        let calls = of_kind(&ed, &sid, "tool_call_update");
        assert_eq!(
            calls.last().map(|c| c["status"].clone()),
            Some(json!("completed")),
            "{calls:?}"
        );
        assert_eq!(env.read("a.txt"), "alpha\r\nBETA\r\ngamma\r\n");
        ed.clear();
        prompt(&cx, &sid, vec![say("/undo")]).await?;
        assert_eq!(
            ed.text(&sid, "agent_message_chunk"),
            "Rolled back: restored a.txt"
        );
        Ok(())
    }))
    .unwrap();
    assert_eq!(env.read("a.txt"), BEFORE);
}
