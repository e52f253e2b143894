//! The validation command's second wall beside Landlock (src/project/confine.rs): a
//! seccomp filter (the kernel's system call filter, Documentation/userspace-api/seccomp_filter
//! in the Linux tree) that refuses with `EACCES` every `socket(2)`, whatever the family
//! (IPv4 and IPv6 of any type, so UDP and DNS too; Unix path sockets such as bb7's own
//! holder socket, `$SSH_AUTH_SOCK` or the Docker socket; netlink, packet), and the three
//! io_uring calls, since io_uring can make a socket without `socket(2)`. `socketpair(2)`
//! stays allowed for streams and sequenced packets: such a pair joins the command's own
//! processes and reaches nothing outside; a datagram pair is refused, as `sendto(2)` on
//! it reaches any datagram socket bound at a path (unix(7)). A system call of another ABI than bb7's own (the 32-bit `socketcall`
//! on x86_64 through `int 0x80`) ends the process, as the filter cannot read it; on x86_64
//! the x32 numbers of the same calls are refused too. The filter is built with rust-vmm's
//! `seccompiler` for x86_64, aarch64 and riscv64; elsewhere, or on a kernel without
//! seccomp, no filter is installed and the debug log says so.

use std::process::Command;

/// A compiled filter, made in bb7's process; [`Filter::install`] applies it in the
/// command's process between `fork` and `exec`, which allocates nothing.
pub struct Filter {
    #[cfg(target_os = "linux")]
    program: Option<seccompiler::BpfProgram>,
}

impl Filter {
    /// The filter for this machine, or none where the kernel or the architecture has no
    /// seccomp (logged at warn level, not an error: the confinement is best effort, as
    /// Landlock's). Errors: the compiler refused the rules, as a sentence for the user.
    pub fn new() -> Result<Filter, String> {
        #[cfg(target_os = "linux")]
        {
            linux::program()
                .map(|program| Filter { program })
                .map_err(|e| format!("cannot build the validation command's socket filter: {e}"))
        }
        #[cfg(not(target_os = "linux"))]
        {
            Ok(Filter {})
        }
    }

    /// Makes `command`'s process install the filter before it runs the program; a
    /// failure fails the spawn, so the command never runs without the filter where the
    /// kernel offered it. Call after the Landlock ruleset's install: hooks run in order.
    pub fn install(self, command: &mut Command) {
        #[cfg(target_os = "linux")]
        {
            use std::os::unix::process::CommandExt;
            let Some(program) = self.program else {
                return;
            };
            // SAFETY: the closure runs in the forked child before exec; it makes the
            // prctl(2) and seccomp(2) calls on the program built in the parent, and its
            // error is a plain OS error, so it allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    seccompiler::apply_filter(&program)
                        .map_err(|_| std::io::Error::from(std::io::ErrorKind::PermissionDenied))
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
mod linux {
    use std::collections::BTreeMap;

    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    /// x86_64's x32 ABI shares the 64-bit audit architecture and marks its numbers with
    /// this bit (arch/x86/include/uapi/asm/unistd.h, `__X32_SYSCALL_BIT`).
    #[cfg(target_arch = "x86_64")]
    const X32_BIT: i64 = 0x4000_0000;

    /// The calls refused: `socket(2)` and io_uring's three.
    fn refused() -> Vec<i64> {
        let mut calls = vec![
            libc::SYS_socket,
            libc::SYS_io_uring_setup,
            libc::SYS_io_uring_enter,
            libc::SYS_io_uring_register,
        ];
        #[cfg(target_arch = "x86_64")]
        {
            let x32: Vec<i64> = calls.iter().map(|n| n | X32_BIT).collect();
            calls.extend(x32);
        }
        calls
    }

    /// `socketpair(2)`'s numbers (x32's too on x86_64).
    fn socketpair() -> Vec<i64> {
        #[cfg(target_arch = "x86_64")]
        {
            vec![libc::SYS_socketpair, libc::SYS_socketpair | X32_BIT]
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            vec![libc::SYS_socketpair]
        }
    }

    /// A `socketpair(2)` whose type (the second argument, less `SOCK_NONBLOCK` and
    /// `SOCK_CLOEXEC`: `SOCK_TYPE_MASK` in include/linux/net.h) is `SOCK_DGRAM`. A
    /// datagram Unix socket sends to any bound path named in `sendto(2)`, connected or
    /// not (unix(7)), so such a pair would reach the datagram sockets outside the copy;
    /// stream and sequenced-packet pairs only talk to each other.
    fn datagram_pair() -> Result<SeccompRule, String> {
        const SOCK_TYPE_MASK: u64 = 0xf;
        let kind = SeccompCondition::new(
            1,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::MaskedEq(SOCK_TYPE_MASK),
            libc::SOCK_DGRAM as u64,
        )
        .map_err(|e| e.to_string())?;
        SeccompRule::new(vec![kind]).map_err(|e| e.to_string())
    }

    /// Whether this kernel has seccomp: `PR_GET_SECCOMP` fails with `EINVAL` where it
    /// was built without it (prctl(2)).
    fn kernel_has_seccomp() -> bool {
        // SAFETY: PR_GET_SECCOMP takes no pointer and only reads the caller's mode.
        unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) >= 0 }
    }

    pub(super) fn program() -> Result<Option<BpfProgram>, String> {
        let arch = match TargetArch::try_from(std::env::consts::ARCH) {
            Ok(arch) => arch,
            Err(_) => {
                tracing::warn!(
                    arch = std::env::consts::ARCH,
                    "no seccomp filter for this architecture: the validation command may open sockets"
                );
                return Ok(None);
            }
        };
        if !kernel_has_seccomp() {
            tracing::warn!("the kernel has no seccomp: the validation command may open sockets");
            return Ok(None);
        }
        let mut rules: BTreeMap<i64, Vec<SeccompRule>> =
            refused().into_iter().map(|nr| (nr, Vec::new())).collect();
        for nr in socketpair() {
            rules.insert(nr, vec![datagram_pair()?]);
        }
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::Allow,
            SeccompAction::Errno(libc::EACCES as u32),
            arch,
        )
        .map_err(|e| e.to_string())?;
        BpfProgram::try_from(filter)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}
