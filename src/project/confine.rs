//! Confinement of the validation command (docs/ARCHITECTURE.md, invariant 17). On
//! Linux a Landlock ruleset (the kernel's sandboxing LSM, <https://landlock.io>) lets
//! the command read and run whatever the user may, but write only beneath the
//! directories it is given (the scratch copy, its private temporary directory, the
//! user's own `hybrid_validate_writable`) and `/dev/null`, bind or connect no TCP port,
//! and signal no process or reach no abstract Unix socket outside its own sandbox.
//! Landlock is best effort: a kernel older than the feature leaves that part open
//! (files: Linux 5.13, TCP: 6.7, signals and abstract sockets: 6.12). UDP and paths of
//! Unix sockets, which Landlock does not cover, are closed by a seccomp filter installed
//! after the ruleset (src/project/confine_seccomp.rs): every `socket(2)` and io_uring
//! call fails with `EACCES`, a stream `socketpair(2)` works. So a validation command that needs a
//! socket of its own (a test suite that starts a local server, or fetches anything)
//! cannot pass confined: point `hybrid_validate_command` at a check that needs no
//! network. Elsewhere than Linux nothing is confined. README, "Local, remote and
//! hybrid", says the same for users.

use std::path::PathBuf;
use std::process::Command;

/// A ruleset made in bb7's process and applied in the command's, between `fork` and
/// `exec` ([`Confinement::install`]). Building it allocates and opens files, which a
/// forked child of a threaded process must not do; applying it is two system calls.
pub struct Confinement {
    #[cfg(target_os = "linux")]
    ruleset: Option<landlock::RulesetCreated>,
    /// The seccomp filter that refuses sockets (src/project/confine_seccomp.rs).
    sockets: super::confine_seccomp::Filter,
}

impl Confinement {
    /// The ruleset that allows writes beneath `writable` only (paths that do not exist
    /// are left out). Errors: the kernel refused to make a ruleset it says it supports,
    /// as a sentence for the user.
    pub fn new(writable: &[PathBuf]) -> Result<Confinement, String> {
        let sockets = super::confine_seccomp::Filter::new()?;
        #[cfg(target_os = "linux")]
        {
            linux::ruleset(writable)
                .map(|ruleset| Confinement {
                    ruleset: Some(ruleset),
                    sockets,
                })
                .map_err(|e| format!("cannot confine the validation command: {e}"))
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = writable;
            Ok(Confinement { sockets })
        }
    }

    /// Makes `command`'s process apply the ruleset, then the socket filter, before it
    /// runs the program; a failure to apply either fails the spawn, so the command never
    /// runs unconfined where the kernel offered the confinement.
    pub fn install(self, command: &mut Command) {
        let sockets = self.sockets;
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let mut slot = self.ruleset;
            // SAFETY: the closure runs in the forked child before exec; it only takes the
            // prepared ruleset and makes the prctl(2) and landlock_restrict_self(2) calls,
            // allocating nothing on success.
            unsafe {
                command.pre_exec(move || match slot.take() {
                    Some(ruleset) => ruleset.restrict_self().map(|_| ()).map_err(|_| {
                        std::io::Error::new(
                            std::io::ErrorKind::PermissionDenied,
                            "Landlock refused to confine the command",
                        )
                    }),
                    None => Ok(()),
                });
            }
        }
        sockets.install(command);
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::path::PathBuf;

    use landlock::{
        ABI, Access, AccessFs, AccessNet, Ruleset, RulesetAttr, RulesetCreated, RulesetCreatedAttr,
        RulesetError, Scope, path_beneath_rules,
    };

    /// The newest Landlock ABI bb7 asks for; an older kernel gets what it supports.
    const ABI_WANTED: ABI = ABI::V6;

    pub(super) fn ruleset(writable: &[PathBuf]) -> Result<RulesetCreated, RulesetError> {
        let abi = ABI_WANTED;
        let existing: Vec<&PathBuf> = writable.iter().filter(|p| p.exists()).collect();
        Ruleset::default()
            .handle_access(AccessFs::from_all(abi))?
            // Handled with no rule: every TCP bind and connect is refused.
            .handle_access(AccessNet::from_all(abi))?
            .scope(Scope::from_all(abi))?
            .create()?
            .add_rules(path_beneath_rules(["/"], AccessFs::from_read(abi)))?
            .add_rules(path_beneath_rules(existing, AccessFs::from_all(abi)))?
            .add_rules(path_beneath_rules(["/dev/null"], AccessFs::from_all(abi)))
    }
}
