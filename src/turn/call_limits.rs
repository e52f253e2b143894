//! Bounds on the tool calls of one model answer. A model (or a server speaking for
//! one) can stream any number of calls: ten thousand `write_file` calls would each
//! become a staged output, a `tool_call` message and a saved chat message, costing
//! the request loop seconds and memory before the user sees a thing. Past either
//! bound bb7 stops reading the answer, stages none of its calls, and ends the turn
//! with an `error` naming the limit (docs/PROTOCOL.md, "bb7 specifics": the answer's limits).

/// The most tool calls (file and retrieval calls together) one answer may carry: far
/// beyond a real answer's (a change touching a few dozen files), far below what
/// stalls the request loop.
pub const MAX_CALLS: usize = 512;

/// The most bytes of tool-call arguments one answer may carry together: the largest
/// single write bb7 accepts (`project::fsutil::MAX_FILE_BYTES`, 64 MiB), so an answer
/// that could land is never cut by it.
pub const MAX_ARGUMENT_BYTES: usize = crate::project::fsutil::MAX_FILE_BYTES as usize;

/// What an answer's calls used so far.
#[derive(Default)]
pub struct CallCount {
    calls: usize,
    bytes: usize,
}

impl CallCount {
    /// Counts a delta of the answer's calls: `new_call` when it starts a call,
    /// `arguments` bytes more. Errors: the message naming the limit it went over.
    pub fn add(&mut self, new_call: bool, arguments: usize) -> Result<(), String> {
        self.calls += usize::from(new_call);
        self.bytes = self.bytes.saturating_add(arguments);
        if self.calls > MAX_CALLS {
            return Err(format!(
                "it carried more than {MAX_CALLS} tool calls (the limit of one answer); none of them was staged"
            ));
        }
        if self.bytes > MAX_ARGUMENT_BYTES {
            return Err(format!(
                "its tool calls' arguments came to more than {} MiB (the limit of one answer); none of them was staged",
                MAX_ARGUMENT_BYTES / (1024 * 1024)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_and_argument_bytes_are_bounded() {
        let mut c = CallCount::default();
        for _ in 0..MAX_CALLS {
            c.add(true, 10).unwrap();
        }
        c.add(false, 10).unwrap();
        assert!(c.add(true, 0).unwrap_err().contains("512 tool calls"));
        let mut c = CallCount::default();
        c.add(true, MAX_ARGUMENT_BYTES).unwrap();
        assert!(c.add(false, 1).unwrap_err().contains("64 MiB"));
    }
}
