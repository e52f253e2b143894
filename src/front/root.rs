//! Finding the project root the way git finds its repository: from the current
//! directory upward to the nearest directory holding `.bb7/`.

use std::path::{Path, PathBuf};

use crate::project::{Project, UserDirs};

/// The nearest ancestor of `start` (itself included) that holds `.bb7/`, or `start`
/// when there is none. The per-user state directory `~/.bb7` is not a project marker,
/// so a directory below the home directory without its own `.bb7/` is not mistaken for
/// a project rooted at home.
pub fn discover(start: &Path) -> PathBuf {
    let user_state = UserDirs::from_env()
        .ok()
        .and_then(|d| d.state.canonicalize().ok());
    let start_abs = start.canonicalize().unwrap_or_else(|_| start.to_path_buf());
    for dir in start_abs.ancestors() {
        let marker = dir.join(Project::STATE_DIR);
        if !marker.is_dir() {
            continue;
        }
        if user_state.is_some() && marker.canonicalize().ok() == user_state {
            continue;
        }
        return dir.to_path_buf();
    }
    start.to_path_buf()
}

/// `path` as the user typed it, made relative to `root` when it lies inside it, so
/// that `bb7 add ../lib.rs` from a subdirectory names the project file. Paths outside
/// the root stay absolute (external files).
pub fn project_path(root: &Path, cwd: &Path, path: &str) -> String {
    let p = Path::new(path);
    let abs = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let abs = normalize(&abs);
    let root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    match abs.strip_prefix(&root) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => abs.to_string_lossy().into_owned(),
    }
}

/// Removes `.` and `..` components without touching the file system (the file may
/// not exist yet), after resolving the longest existing prefix through symlinks.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    // Canonicalize the existing part so /tmp vs /private/tmp style links agree with
    // the canonical root.
    let mut existing = out.clone();
    let mut rest = Vec::new();
    while !existing.exists() {
        match existing.file_name() {
            Some(name) => {
                rest.push(name.to_owned());
                existing.pop();
            }
            None => return out,
        }
    }
    let mut base = existing.canonicalize().unwrap_or(existing);
    for name in rest.into_iter().rev() {
        base.push(name);
    }
    base
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_from_a_subdirectory_are_relative_to_the_root() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        let cwd = root.join("src");
        assert_eq!(project_path(&root, &cwd, "lib.rs"), "src/lib.rs");
        assert_eq!(project_path(&root, &cwd, "../README.md"), "README.md");
        assert_eq!(project_path(&root, &cwd, "./deep/x.rs"), "src/deep/x.rs");
        let outside = project_path(&root, &cwd, "../../elsewhere.txt");
        assert!(Path::new(&outside).is_absolute(), "{outside}");
    }
}
