//! MCP resources and prompts on the command line (docs/PROTOCOL.md "MCP resources and
//! prompts"): `bb7 mcp list|allow|deny`, `bb7 add mcp:SERVER:URI`, and in `bb7 chat`
//! `/add mcp:SERVER:URI` and `/mcp:SERVER:PROMPT name=value …`.

use super::session::Session;
use super::terminal::{self, Sink};
use crate::front::client::{Failure, Res};
use crate::front::mcp_line::{PromptLine, parse_prompt_line};
use crate::protocol::action::Action;
use crate::protocol::params::{self, NonEmpty};
use crate::protocol::replies::{Ack, McpAttached, McpPrompt, McpPrompts, McpResources, McpServers};

/// What `bb7 mcp` does.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum McpCommand {
    /// List the configured servers with their resources, resource templates and
    /// prompts (a server starts to be asked, and stops when bb7 does).
    List,
    /// Allow this project's own servers (.bb7/config.json `mcp_servers`) to start:
    /// they run commands that came with the project. Asked again when they change.
    Allow,
    /// Withdraw `bb7 mcp allow` for this project.
    Deny,
}

/// The `mcp:` prefix of a resource named on the command line.
pub const PREFIX: &str = "mcp:";

/// Splits `mcp:SERVER:URI` into the server and the URI.
pub fn parse_ref(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(PREFIX)?;
    let (server, uri) = rest.split_once(':')?;
    (!server.is_empty() && !uri.is_empty()).then_some((server, uri))
}

/// Runs `bb7 mcp …`.
pub(super) async fn run(s: &mut Session, cmd: McpCommand) -> Res<()> {
    match cmd {
        McpCommand::List => list(s).await,
        McpCommand::Allow | McpCommand::Deny => {
            let allow = matches!(cmd, McpCommand::Allow);
            s.c.call::<Ack>(Action::McpConsent(params::McpConsent { allow }))
                .await?;
            let what = if allow { "may start" } else { "will not start" };
            eprintln!("bb7: this project's MCP servers {what}");
            Ok(())
        }
    }
}

fn out(text: &str) -> String {
    terminal::safe(text, Sink::Stdout).into_owned()
}

async fn list(s: &mut Session) -> Res<()> {
    let servers: McpServers =
        s.c.call(Action::McpServersList(params::NoParams {}))
            .await?;
    if let Some(e) = &servers.config_error {
        eprintln!("bb7: warning: {}", terminal::err(e));
    }
    if servers.servers.is_empty() {
        println!("no MCP servers (mcp_servers in ~/.config/bb7/config.json or .bb7/config.json)");
        return Ok(());
    }
    for server in &servers.servers {
        let transport = server.transport.as_deref().unwrap_or("?");
        println!("{} ({transport})", out(&server.name));
        if let Some(e) = &server.error {
            println!("  error: {}", out(e));
            continue;
        }
        if server.needs_consent {
            println!("  not started: a project server; `bb7 mcp allow` lets it run");
            continue;
        }
        let name = NonEmpty(server.name.clone());
        let listed: Res<McpResources> =
            s.c.call(Action::McpResourcesList(params::McpServerRef {
                server: name.clone(),
            }))
            .await;
        match listed {
            Ok(r) => {
                for res in &r.resources {
                    let mime = res.mime.as_deref().unwrap_or("");
                    let only = if res.user_only { " (for you only)" } else { "" };
                    println!(
                        "  mcp:{}:{}  {}{only}",
                        out(&server.name),
                        out(&res.uri),
                        out(mime)
                    );
                }
                for t in &r.templates {
                    println!(
                        "  mcp:{}:{}  (template)",
                        out(&server.name),
                        out(&t.uri_template)
                    );
                }
            }
            Err(f) => println!("  error: {}", out(&f.message)),
        }
        let prompts: Res<McpPrompts> =
            s.c.call(Action::McpPromptsList(params::McpPromptsList {
                server: Some(name),
            }))
            .await;
        if let Ok(p) = prompts {
            for p in &p.prompts {
                let args: Vec<String> = p
                    .arguments
                    .iter()
                    .map(|a| format!("{}={}", a.name, if a.required { "…" } else { "[…]" }))
                    .collect();
                println!(
                    "  /mcp:{}:{} {}",
                    out(&server.name),
                    out(&p.name),
                    out(&args.join(" "))
                );
            }
        }
    }
    Ok(())
}

/// `bb7 add mcp:SERVER:URI`, `/add mcp:…`: reads the resource and attaches it to the
/// active chat (a new one when none is active).
pub(super) async fn add(s: &mut Session, text: &str) -> Res<()> {
    let (server, uri) =
        parse_ref(text).ok_or_else(|| Failure::new(format!("{text}: expected mcp:SERVER:URI")))?;
    s.ensure_chat().await?;
    let r: McpAttached =
        s.c.call(Action::McpResourceAttach(params::McpResourceAttach {
            server: NonEmpty(server.to_owned()),
            uri: NonEmpty(uri.to_owned()),
        }))
        .await?;
    let cut = if r.truncated {
        format!(", cut to 64 KiB of {} bytes", r.bytes)
    } else {
        String::new()
    };
    let only = if r.user_only {
        " (for you only: not sent to the model)"
    } else {
        ""
    };
    for p in &r.paths {
        eprintln!("bb7: attached {}{cut}{only}", terminal::err(p));
    }
    // Named like a file's add: the user cannot see these in the text.
    super::invisible::warn(&r.invisible_warnings);
    Ok(())
}

/// `/mcp:SERVER:PROMPT name=value …`: renders the prompt (its embedded resources are
/// attached) and returns the text to send as the user's message.
pub(super) async fn prompt(s: &mut Session, line: &str) -> Res<String> {
    let PromptLine {
        server,
        name,
        arguments,
    } = parse_prompt_line(line)
        .ok_or_else(|| Failure::new("expected /mcp:SERVER:PROMPT name=value …"))?
        .map_err(Failure::new)?;
    let (server, name) = (server.as_str(), name.as_str());
    s.ensure_chat().await?;
    let r: McpPrompt =
        s.c.call(Action::McpPromptGet(params::McpPromptGet {
            server: NonEmpty(server.to_owned()),
            name: NonEmpty(name.to_owned()),
            arguments,
        }))
        .await?;
    for p in &r.attached {
        eprintln!("bb7: attached {}", terminal::err(p));
    }
    for why in &r.skipped {
        eprintln!("bb7: not attached: {}", terminal::err(why));
    }
    Ok(r.text)
}

/// Completions of `/add mcp:…` and `/mcp:…` in `bb7 chat`: every resource as
/// `mcp:SERVER:URI` and every prompt as `/mcp:SERVER:PROMPT`, from the servers that
/// may start. Servers that fail are left out.
pub(super) async fn completions(s: &mut Session) -> (Vec<String>, Vec<String>) {
    let (mut resources, mut prompts) = (Vec::new(), Vec::new());
    let Ok(servers) =
        s.c.call::<McpServers>(Action::McpServersList(params::NoParams {}))
            .await
    else {
        return (resources, prompts);
    };
    for server in servers
        .servers
        .iter()
        .filter(|s| !s.needs_consent && s.error.is_none())
    {
        let name = NonEmpty(server.name.clone());
        if let Ok(r) =
            s.c.call::<McpResources>(Action::McpResourcesList(params::McpServerRef {
                server: name,
            }))
            .await
        {
            resources.extend(
                r.resources
                    .iter()
                    .map(|r| format!("mcp:{}:{}", server.name, r.uri)),
            );
        }
    }
    if let Ok(p) =
        s.c.call::<McpPrompts>(Action::McpPromptsList(params::McpPromptsList::default()))
            .await
    {
        prompts.extend(
            p.prompts
                .iter()
                .map(|p| format!("/mcp:{}:{}", p.server, p.name)),
        );
    }
    (resources, prompts)
}

/// What a `bb7 chat` line about MCP asks of the chat loop.
pub(super) enum ChatLine {
    /// Send this text as the user's message (a rendered `/mcp:` prompt).
    Send(String),
    /// Done; Tab completes these from now on (`/mcp` listed them).
    Completions(Vec<String>),
    /// Done.
    Nothing,
}

/// Handles `/mcp` (lists the servers' resources and prompts, and loads them for Tab),
/// `/mcp:SERVER:PROMPT …` and the `mcp:` resources of `/add` (the other paths of the
/// line are left to `/add`, returned as the rest). `None`: not an MCP line.
pub(super) async fn chat_line(s: &mut Session, text: &str) -> Option<(Res<ChatLine>, String)> {
    if text == "/mcp" {
        let listed = list(s).await.map(|_| ());
        let (mut resources, prompts) = completions(s).await;
        resources.extend(prompts);
        return Some((
            listed.map(|_| ChatLine::Completions(resources)),
            String::new(),
        ));
    }
    if text.starts_with("/mcp:") {
        return Some((prompt(s, text).await.map(ChatLine::Send), String::new()));
    }
    let args = text.strip_prefix("/add ")?;
    let (resources, rest): (Vec<&str>, Vec<&str>) =
        args.split_whitespace().partition(|a| a.starts_with(PREFIX));
    if resources.is_empty() {
        return None;
    }
    for r in resources {
        if let Err(f) = add(s, r).await {
            return Some((Err(f), String::new()));
        }
    }
    let rest = if rest.is_empty() {
        String::new()
    } else {
        format!("/add {}", rest.join(" "))
    };
    Some((Ok(ChatLine::Nothing), rest))
}

/// Tab completion of `/add mcp:…` and `/mcp:…` from `candidates` (what `/mcp`
/// loaded): the start of the word under the cursor and the candidates it begins.
/// `None`: the word is not an MCP one.
pub(super) fn complete(candidates: &[String], typed: &str) -> Option<(usize, Vec<String>)> {
    let start = typed.rfind(' ').map_or(0, |i| i + 1);
    let word = &typed[start..];
    let resource = start > 0 && typed.starts_with("/add ") && word.starts_with("mcp");
    let prompt = start == 0 && word.starts_with("/mcp:");
    if !resource && !prompt {
        return None;
    }
    let found = candidates
        .iter()
        .filter(|c| c.starts_with(word) && c.starts_with('/') == prompt)
        .cloned()
        .collect();
    Some((start, found))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_lines() {
        let l = parse_prompt_line(r#"/mcp:docs:review focus="error handling" depth=2"#)
            .unwrap()
            .unwrap();
        assert_eq!((l.server.as_str(), l.name.as_str()), ("docs", "review"));
        assert_eq!(l.arguments["focus"], "error handling");
        assert_eq!(l.arguments["depth"], "2");
        assert!(parse_prompt_line("/mcp:docs").is_none());
        assert!(parse_prompt_line("hello").is_none());
        assert!(parse_prompt_line("/mcp:a:b oops").unwrap().is_err());
        assert!(parse_prompt_line(r#"/mcp:a:b k="open"#).unwrap().is_err());
    }
}
