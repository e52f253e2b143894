//! Chats, models and history: `new`, `chats`, `models`, `show`, `log`, and the
//! `.gitignore` offer of `init`.

use std::path::Path;

use super::prompt;
use super::render::{Table, Waiting};
use super::session::{Session, project_store};
use crate::chat::model::Message;
use crate::front::client::{Failure, Res};
pub(super) use crate::front::markdown::{markdown, text_of};
use crate::llm::models::ModelInfo;
use crate::protocol::action::Action;
use crate::protocol::params;
use crate::protocol::replies::{ChatActive, ChatListing, ChatView, Created, Models};

/// `bb7 new [NAME]`: prints the new chat's id.
/// When the chat that was active is open in another process (an editor's pane), says
/// so on stderr: that process keeps showing the old chat while one-shot commands (the
/// editor's keys among them) now go to the new one, which is never to happen silently.
pub(super) async fn new_chat(s: &mut Session, name: Option<String>) -> Res<()> {
    let previous = super::session::active_in_index(&s.root);
    let r: Created =
        s.c.call(Action::ChatNew(params::ChatNew {
            name,
            ..Default::default()
        }))
        .await?;
    s.out(&format!("{}\n", r.id));
    // `bb7 chat`'s own `/new` moves its own holder; only a shell's `bb7 new` leaves one.
    let previous = previous.filter(|_| !s.in_chat);
    let held = previous.filter(|p| *p != r.id).and_then(|p| {
        let dir = project_store(&s.root)?.chat_dir(&p).ok()?;
        Some((crate::project::lock::holder(&dir)?, p))
    });
    if let Some((pid, old)) = held {
        eprintln!(
            "bb7: chat {} is now the project's active chat, for commands such as `bb7 \
             add`; chat {old} stays open in PID {pid} (an editor's pane), which still \
             shows it (switch that pane to the new chat there)",
            r.id
        );
    }
    Ok(())
}

/// The chat `text` names among the project's: its id, the one id that starts with it,
/// or the one chat with that name (case aside). Errors: none, or several, named.
pub(super) async fn resolve_chat(s: &mut Session, text: &str) -> Res<String> {
    resolve_chat_in(s, text, false).await
}

/// [`resolve_chat`] among the archived chats too when `archived` (`bb7 unarchive`).
pub(super) async fn resolve_chat_in(s: &mut Session, text: &str, archived: bool) -> Res<String> {
    let r: ChatListing =
        s.c.call(Action::ChatList(params::ChatList {
            include_archived: archived.then_some(true),
            ..params::ChatList::default()
        }))
        .await?;
    let text = text.trim();
    if let Some(c) = r.chats.iter().find(|c| c.id == text) {
        return Ok(c.id.clone());
    }
    let by_id: Vec<&str> = r
        .chats
        .iter()
        .filter(|c| !text.is_empty() && c.id.starts_with(text))
        .map(|c| c.id.as_str())
        .collect();
    let by_name: Vec<&str> = r
        .chats
        .iter()
        .filter(|c| c.name.eq_ignore_ascii_case(text))
        .map(|c| c.id.as_str())
        .collect();
    match (by_id.as_slice(), by_name.as_slice()) {
        ([one], []) | ([], [one]) => Ok((*one).to_owned()),
        ([], []) => Err(Failure::new(format!(
            "no chat {} (ids and names in `{}`)",
            super::terminal::err(text),
            s.cmd("bb7 chats", "/chats")
        ))),
        _ => {
            let mut all: Vec<&str> = by_id.iter().chain(&by_name).copied().collect();
            all.dedup();
            Err(Failure::new(format!(
                "{} names several chats: {}; give more of the id",
                super::terminal::err(text),
                all.join(", ")
            )))
        }
    }
}

/// `bb7 chats`: `* ID  CREATED  NAME`, `*` on the active chat; aligned, with a header
/// on a terminal.
pub(super) async fn chats(s: &mut Session) -> Res<()> {
    let r: ChatListing =
        s.c.call(Action::ChatList(params::ChatList::default()))
            .await?;
    let active: ChatActive = s.c.call(Action::ChatActive(params::NoParams {})).await?;
    if r.chats.is_empty() {
        eprintln!("bb7: no chats yet (`bb7 new` or `bb7 ask` starts one)");
        return Ok(());
    }
    // A chat held by an editor is active in the project's index but not in this
    // process (`init` leaves a held chat unselected): the index says which it is.
    let active_id = active
        .id
        .map(|id| id.into_owned())
        .or_else(|| super::session::active_in_index(&s.root));
    let mut table = Table::new(["", "ID", "CREATED", "NAME", ""]);
    for ch in r.chats.iter() {
        let mark = if active_id.as_deref() == Some(ch.id.as_str()) {
            "*"
        } else {
            " "
        };
        let lock = if ch.locked { "(open elsewhere)" } else { "" };
        table.row([
            mark.to_owned(),
            ch.id.clone(),
            ch.created.clone(),
            ch.name.clone(),
            lock.to_owned(),
        ]);
    }
    s.out_rendered(&table.render());
    Ok(())
}

/// `bb7 models [--refresh] [--reset-tools]`: `ID  CONTEXT  $IN  $OUT`, prices per
/// million tokens; the context is what the server runs with when it says (llama.cpp
/// `meta.n_ctx`, LM Studio `loaded_context_length`, Ollama's `/api/show`).
pub(super) async fn models(s: &mut Session, refresh: bool, reset_tools: bool) -> Res<()> {
    let mut waiting = Waiting::start("fetching the models list");
    let r: Models =
        s.c.call(Action::GetModels(params::GetModels {
            refresh: Some(refresh),
            reset_tools: reset_tools.then_some(true),
        }))
        .await?;
    waiting.stop();
    if reset_tools {
        eprintln!("bb7: every model's next turn tries tool calls again");
    }
    if r.stale {
        eprintln!("bb7: the model API could not be reached; this list is from the cache");
    }
    if r.models.is_empty() {
        eprintln!("bb7: the model API lists no models");
        return Ok(());
    }
    let mut table = Table::new(["MODEL", "CONTEXT", "$/M IN", "$/M OUT"]);
    for m in r.models.iter() {
        let ctx = match m.context_length {
            0 => "?".to_owned(),
            c => c.to_string(),
        };
        table.row([
            m.id.clone(),
            ctx,
            per_million(price(m, "prompt")),
            per_million(price(m, "completion")),
        ]);
    }
    s.out_rendered(&table.render());
    Ok(())
}

/// A price per token as dollars per million tokens (`?` when unknown).
fn per_million(p: Option<f64>) -> String {
    match p {
        Some(p) => format!("${:.2}", p * 1e6),
        None => "?".into(),
    }
}

/// The models list (the day-old cache when fresh), empty when it cannot be had.
async fn model_list(s: &mut Session) -> Vec<ModelInfo> {
    s.c.call::<Models>(Action::GetModels(params::GetModels {
        refresh: Some(false),
        reset_tools: None,
    }))
    .await
    .map(|m| m.models.into_owned())
    .unwrap_or_default()
}

/// Warns on stderr when the models list does not know `name`, with the closest id.
/// No list (a local server without one, no network) warns nothing: the model may
/// still exist.
pub(super) async fn warn_unknown_model(s: &mut Session, name: &str) {
    let list = model_list(s).await;
    if list.is_empty() || list.iter().any(|m| m.id == name) {
        return;
    }
    let ids = list.iter().map(|m| m.id.as_str());
    let hint = crate::config::keys::closest(name, ids)
        .map(|m| format!("; did you mean {m}?"))
        .unwrap_or_default();
    eprintln!("bb7: warning: model {name} is not in the models list (`bb7 models`){hint}");
}

/// The USD price per prompt token of `model`, when the models list has it.
pub(super) async fn prompt_price(s: &mut Session, model: &str) -> Option<f64> {
    let list = model_list(s).await;
    list.iter()
        .find(|m| m.id == model)
        .and_then(|m| price(m, "prompt"))
}

/// `bb7 show [--last]`.
pub(super) async fn show(s: &mut Session, last: bool) -> Res<()> {
    s.active().await?;
    let chat: ChatView = s.c.call(Action::ChatGet(params::NoParams {})).await?;
    if last {
        let answer = chat
            .messages
            .iter()
            .rev()
            .filter(|m| m.role == "assistant")
            .map(text_of)
            .find(|t| !t.trim().is_empty());
        match answer {
            Some(t) => s.out(&format!("{}\n", t.trim_end())),
            None => eprintln!("bb7: the chat has no answer yet"),
        }
        return Ok(());
    }
    if chat.messages.is_empty() {
        eprintln!("bb7: the chat has no messages yet");
    }
    s.out(&markdown(&chat));
    Ok(())
}

/// The summed `usage.cost` of a chat's messages, in USD.
fn cost_of(messages: &[Message]) -> f64 {
    messages
        .iter()
        .filter_map(|m| m.extra.get("usage"))
        .filter_map(|u| u.get("cost").and_then(serde_json::Value::as_f64))
        // Not `sum()`: the sum of no floats is -0.0, printed as "$-0.0000".
        .fold(0.0, |a, b| a + b)
}

/// `bb7 log`: `ID  CREATED  $COST  MESSAGES  NAME`, newest first.
pub(super) async fn log(s: &mut Session) -> Res<()> {
    let r: ChatListing =
        s.c.call(Action::ChatList(params::ChatList::default()))
            .await?;
    if r.chats.is_empty() {
        eprintln!("bb7: no chats yet");
        return Ok(());
    }
    let store = project_store(&s.root);
    let mut table = Table::new(["ID", "CREATED", "COST", "QUESTIONS", "NAME"]);
    let mut total = 0.0;
    for ch in r.chats.iter() {
        // Read-only: loading a chat file takes no lock and changes nothing.
        let chat = store.as_ref().and_then(|st| st.load(&ch.id).ok());
        let (cost, turns) = chat
            .map(|c| {
                let turns = c.messages.iter().filter(|m| m.role == "user").count();
                (cost_of(&c.messages), turns)
            })
            .unwrap_or((0.0, 0));
        total += cost;
        table.row([
            ch.id.clone(),
            ch.created.clone(),
            format!("${cost:.4}"),
            turns.to_string(),
            ch.name.clone(),
        ]);
    }
    s.out_rendered(&table.render());
    eprintln!("bb7: {} chat(s), ${total:.4} in all", r.chats.len());
    Ok(())
}

/// After `bb7 init`: `.bb7/` is per-project state, so offer to keep it out of git —
/// asked on a terminal, printed as a command otherwise.
pub(super) async fn offer_gitignore(root: &Path) -> Res<()> {
    let path = root.join(".gitignore");
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    if current
        .lines()
        .any(|l| matches!(l.trim(), ".bb7" | ".bb7/" | "/.bb7" | "/.bb7/"))
    {
        return Ok(());
    }
    if !prompt::interactive() {
        eprintln!(
            "bb7: .bb7/ holds this project's chats and snapshots; to keep it out of git: \
             echo '.bb7/' >> .gitignore"
        );
        return Ok(());
    }
    if prompt::confirm("bb7: add .bb7/ to .gitignore? [y/N] ".into()).await {
        let sep = if current.is_empty() || current.ends_with('\n') {
            ""
        } else {
            "\n"
        };
        std::fs::write(&path, format!("{current}{sep}.bb7/\n"))
            .map_err(|e| Failure::new(format!("cannot write {}: {e}", path.display())))?;
        eprintln!("bb7: added .bb7/ to .gitignore");
    }
    Ok(())
}

/// A price in USD per token as OpenRouter sends it: a decimal string (`"0.000003"`);
/// numbers are accepted too.
fn price(m: &ModelInfo, key: &str) -> Option<f64> {
    match m.pricing.get(key)? {
        serde_json::Value::String(s) => s.trim().parse().ok(),
        serde_json::Value::Number(n) => n.as_f64(),
        _ => None,
    }
}
