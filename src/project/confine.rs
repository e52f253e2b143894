//! Confinement of the validation command (docs/ARCHITECTURE.md, invariant 17). On
//! Linux a Landlock ruleset (the kernel's sandboxing LSM, <https://landlock.io>) lets
//! the command read and run whatever the user may, but write only beneath the
//! directories it is given (the scratch copy, its private temporary directory, the
//! user's own `hybrid_validate_writable`) and `/dev/null`, bind or connect no TCP port,
//! and signal no process or reach no abstract Unix socket outside its own sandbox.
//! Landlock is best effort: a kernel older than the feature leaves that part open
//! (files: Linux 5.13, TCP: 6.7, signals and abstract sockets: 6.12).
//!
//! Landlock does not cover UDP, raw sockets or connecting to a Unix socket by its path,
//! and a command that reaches bb7's own holder socket (`.bb7/…/holder.sock`, open to
//! every process of the user) could apply changes to the real files. So a seccomp-bpf
//! filter (seccomp(2), built with rust-vmm's `seccompiler`) refuses with `EACCES` every
//! `socket(2)` call, of any family, and `io_uring_setup(2)` (io_uring makes sockets past
//! a filter on `socket`); `socketpair(2)`, which only joins processes of the command,
//! stays allowed. The filter exists for x86_64, aarch64 and riscv64; a call made through
//! another architecture's entry (a 32-bit program on x86_64) kills that program.
//! Elsewhere than Linux nothing is confined. README, "Local, remote and hybrid", says
//! the same for users.

use std::path::PathBuf;
use std::process::Command;

/// A ruleset made in bb7's process and applied in the command's, between `fork` and
/// `exec` ([`Confinement::install`]). Building it allocates and opens files, which a
/// forked child of a threaded process must not do; applying it is two system calls.
pub struct Confinement {
    #[cfg(target_os = "linux")]
    ruleset: Option<landlock::RulesetCreated>,
    #[cfg(target_os = "linux")]
    sockets: Option<seccompiler::BpfProgram>,
}

impl Confinement {
    /// The ruleset that allows writes beneath `writable` only (paths that do not exist
    /// are left out). Errors: the kernel refused to make a ruleset it says it supports,
    /// as a sentence for the user.
    pub fn new(writable: &[PathBuf]) -> Result<Confinement, String> {
        #[cfg(target_os = "linux")]
        {
            let ruleset = linux::ruleset(writable)
                .map_err(|e| format!("cannot confine the validation command: {e}"))?;
            let sockets = sockets::filter()
                .map_err(|e| tracing::warn!("the validation command's sockets stay open: {e}"))
                .ok();
            Ok(Confinement {
                ruleset: Some(ruleset),
                sockets,
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = writable;
            Ok(Confinement {})
        }
    }

    /// Makes `command`'s process apply the ruleset before it runs the program; a
    /// failure to apply it fails the spawn, so the command never runs unconfined where
    /// the kernel offered the confinement.
    pub fn install(self, command: &mut Command) {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let mut slot = self.ruleset;
            let sockets = self.sockets;
            // SAFETY: the closure runs in the forked child before exec; it only takes the
            // prepared ruleset and program and makes the prctl(2),
            // landlock_restrict_self(2) and seccomp(2) calls, allocating nothing on
            // success.
            unsafe {
                command.pre_exec(move || {
                    let refused = |what: &str| {
                        std::io::Error::new(std::io::ErrorKind::PermissionDenied, what)
                    };
                    if let Some(ruleset) = slot.take() {
                        ruleset
                            .restrict_self()
                            .map_err(|_| refused("Landlock refused to confine the command"))?;
                    }
                    if let Some(program) = &sockets {
                        seccompiler::apply_filter(program)
                            .map_err(|_| refused("seccomp refused the command's socket filter"))?;
                    }
                    Ok(())
                });
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = command;
        }
    }
}

#[cfg(target_os = "linux")]
mod sockets {
    use std::collections::BTreeMap;

    use seccompiler::{BpfProgram, SeccompAction, SeccompFilter, TargetArch};

    /// x32 system calls on x86_64 carry this bit and the x86_64 audit architecture.
    const X32_BIT: i64 = 0x4000_0000;

    /// The program that refuses `socket(2)` and `io_uring_setup(2)` with `EACCES` and
    /// allows everything else. Errors: an architecture seccompiler has no filter for.
    pub(super) fn filter() -> Result<BpfProgram, String> {
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
        let mut calls = vec![libc::SYS_socket, libc::SYS_io_uring_setup];
        if matches!(arch, TargetArch::x86_64) {
            calls.extend([
                libc::SYS_socket | X32_BIT,
                libc::SYS_io_uring_setup | X32_BIT,
            ]);
        }
        let rules: BTreeMap<i64, Vec<seccompiler::SeccompRule>> =
            calls.into_iter().map(|c| (c, Vec::new())).collect();
        SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .and_then(|f| f.try_into())
        .map_err(|e| e.to_string())
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
