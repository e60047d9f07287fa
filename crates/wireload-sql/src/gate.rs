//! The one gate between a session and the server's files. Every path a statement names
//! (`COPY ... FROM` or `TO` a file, a file or glob in FROM, `read_csv`, `EXPORT` and
//! `IMPORT DATABASE`) is resolved here. A local session (the shell, `wireload sql`,
//! scripts, Python) keeps the rights of the user who runs it; a network client's session
//! reaches a file only when its role holds the privilege and the file lies beneath a
//! directory the operator allowed (`wireload serve --allow-read DIR`, `--allow-write DIR`).
//!
//! A client's file is opened relative to the allowed directory's descriptor with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: `..` and relative symbolic links
//! resolve inside it or fail (an absolute link fails), and what was checked is what is read (the descriptor is kept, so a
//! path swapped for a symbolic link afterwards changes nothing). Readers and writers that
//! take a path get the held descriptor's `/proc/self/fd` path.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};
use wireload_load::Source;

use crate::SqlError;

/// The longest path the gate takes from a client (Linux's `PATH_MAX`).
const MAX_PATH: usize = 4096;

/// How the kernel resolves a client's path: beneath the allowed directory, no `/proc`
/// magic links.
const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_MAGICLINKS);

/// A directory the operator allowed: the names it goes by (as given, made absolute, and
/// its real path) and the directory, open.
#[derive(Debug)]
struct AllowedDir {
    names: Vec<PathBuf>,
    dir: OwnedFd,
}

/// The directories a server's network clients may read and write in (`--allow-read`,
/// `--allow-write`); none by default, so a default server opens no file for a client.
#[derive(Debug, Default)]
pub struct FileGate {
    read: Vec<AllowedDir>,
    write: Vec<AllowedDir>,
}

impl FileGate {
    /// A gate that lets clients read beneath the directories `read` and write beneath the
    /// directories `write` (each must exist).
    pub fn new(read: &[PathBuf], write: &[PathBuf]) -> std::io::Result<FileGate> {
        let open = |dirs: &[PathBuf]| -> std::io::Result<Vec<AllowedDir>> {
            dirs.iter().map(|d| allowed_dir(d)).collect()
        };
        Ok(FileGate {
            read: open(read)?,
            write: open(write)?,
        })
    }

    /// The real paths of the directories clients may read in.
    pub fn readable(&self) -> Vec<&Path> {
        self.read.iter().map(AllowedDir::real).collect()
    }

    /// The real paths of the directories clients may write in.
    pub fn writable(&self) -> Vec<&Path> {
        self.write.iter().map(AllowedDir::real).collect()
    }
}

impl AllowedDir {
    fn real(&self) -> &Path {
        self.names.last().expect("a directory has its real path")
    }
}

/// Opens the directory `dir` for the gate, under its names.
fn allowed_dir(dir: &Path) -> std::io::Result<AllowedDir> {
    let real = std::fs::canonicalize(dir)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
    let fd = rustix::fs::open(
        &real,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        std::io::Error::new(
            std::io::Error::from(e).kind(),
            format!(
                "{}: not a directory that can be opened ({e})",
                dir.display()
            ),
        )
    })?;
    let given = normalize(&absolute(dir));
    let names = if given == real {
        vec![real]
    } else {
        vec![given, real]
    };
    Ok(AllowedDir { names, dir: fd })
}

/// What a session may do with the server's files.
#[derive(Debug, Clone, Default)]
pub enum FileAccess {
    /// The rights of the operating-system user who runs the process: the shell,
    /// `wireload sql`, `-f` and `--init` scripts, the Python package.
    #[default]
    Local,
    /// A network client's: with its role's privileges, beneath the gate's directories.
    Client {
        /// The operator's directories.
        gate: Arc<FileGate>,
        /// The role may read server files (superuser, or `pg_read_server_files`).
        read: bool,
        /// The role may write server files (superuser, or `pg_write_server_files`).
        write: bool,
    },
}

/// A file or directory the gate let a statement reach.
#[derive(Debug)]
pub(crate) struct Granted {
    /// The path as the statement wrote it.
    shown: String,
    /// For a client: the descriptor checked (the file, or the directory holding `entry`).
    held: Option<Arc<File>>,
    /// For a client's write: the name of the entry to make in the held directory.
    entry: Option<OsString>,
}

impl Granted {
    /// The path as the statement wrote it.
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// The path to open it by: the path as written in a local session; for a client's,
    /// the held descriptor's `/proc/self/fd` path (the object checked, which no rename can
    /// swap), with the entry to make beneath it.
    pub(crate) fn path(&self) -> PathBuf {
        let Some(held) = &self.held else {
            return PathBuf::from(&self.shown);
        };
        let fd = PathBuf::from(format!("/proc/self/fd/{}", held.as_raw_fd()));
        match &self.entry {
            Some(entry) => fd.join(entry),
            None => fd,
        }
    }

    /// The file as a load's source.
    pub(crate) fn source(self) -> Source {
        match self.held {
            None => Source::File(PathBuf::from(self.shown)),
            Some(file) => Source::Opened {
                name: self.shown,
                file,
            },
        }
    }

    /// `e`, with the path it names told as the statement wrote it (a reader given
    /// [`Granted::path`] names that path in its errors).
    pub(crate) fn unmask(&self, e: SqlError) -> SqlError {
        if self.held.is_none() {
            return e;
        }
        let message = e.to_string();
        let inner = self.path().display().to_string();
        if !message.contains(&inner) {
            return e;
        }
        SqlError::Relabelled {
            message: message.replace(&inner, &self.shown),
            state: e.sqlstate(),
        }
    }
}

/// What a statement does with a path, named in the gate's messages (`COPY FROM`,
/// `EXPORT DATABASE`...).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Use {
    /// Reads the file or directory.
    Read(&'static str),
    /// Creates or replaces it.
    Write(&'static str),
}

impl Use {
    fn what(self) -> &'static str {
        match self {
            Use::Read(w) | Use::Write(w) => w,
        }
    }
}

/// The kind of object a read expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Directory,
}

impl FileAccess {
    /// For a client's session, the allowed directory `path` lies beneath (of those to read
    /// or write in, as `use_` does) and the path relative to it; refused without the
    /// privilege `use_` needs. None for a local session.
    fn allowed(&self, path: &str, use_: Use) -> Result<Option<(&AllowedDir, PathBuf)>, SqlError> {
        let FileAccess::Client { gate, read, write } = self else {
            return Ok(None);
        };
        let (privileged, dirs, verb, flag) = match use_ {
            Use::Read(_) => (*read, &gate.read, "read", "--allow-read"),
            Use::Write(_) => (*write, &gate.write, "write", "--allow-write"),
        };
        if !privileged {
            return Err(unprivileged(use_, path));
        }
        beneath(dirs, path, use_, verb, flag).map(Some)
    }

    /// The regular file (or, with `Kind::Directory`, the directory) at `path`, to read.
    pub(crate) fn read(&self, path: &str, use_: Use, kind: Kind) -> Result<Granted, SqlError> {
        let Some((dir, rest)) = self.allowed(path, use_)? else {
            return Ok(local(path));
        };
        let refuse = |why: String| denied(use_, path, why);
        let flags = match kind {
            Kind::File => OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC,
            Kind::Directory => OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        };
        let fd = open_beneath(dir, &rest, flags, use_, path)?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| io_error(use_, path, e))?;
        let file_type = FileType::from_raw_mode(stat.st_mode);
        match (kind, file_type) {
            (Kind::File, FileType::RegularFile) | (Kind::Directory, FileType::Directory) => {}
            (Kind::File, FileType::Directory) => {
                return Err(refuse("it is a directory, not a file".into()));
            }
            _ => {
                return Err(refuse(format!(
                    "it is a {}, not a regular file",
                    type_name(file_type)
                )));
            }
        }
        let fs = rustix::fs::fstatfs(&fd).map_err(|e| io_error(use_, path, e))?;
        if fs.f_type == rustix::fs::PROC_SUPER_MAGIC || fs.f_type == SYSFS_MAGIC {
            return Err(refuse("it lies in /proc or /sys".into()));
        }
        if kind == Kind::Directory {
            no_links_in(&fd, use_, path)?;
        }
        Ok(Granted {
            shown: path.to_string(),
            held: Some(Arc::new(File::from(fd))),
            entry: None,
        })
    }

    /// The file or directory at `path`, to create or replace: its parent directory is
    /// held, the entry itself is made by the writer.
    pub(crate) fn write(&self, path: &str, use_: Use) -> Result<Granted, SqlError> {
        let Some((dir, rest)) = self.allowed(path, use_)? else {
            return Ok(local(path));
        };
        let refuse = |why: String| denied(use_, path, why);
        let (parent, entry) = match (rest.parent(), rest.components().next_back()) {
            (Some(parent), Some(Component::Normal(entry))) => {
                (parent.to_path_buf(), entry.to_os_string())
            }
            _ => {
                return Err(refuse(
                    "it names no file inside an allowed directory (only a new or existing \
                     entry beneath one can be written)"
                        .into(),
                ));
            }
        };
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let fd = open_beneath(dir, &parent, flags, use_, path)?;
        match rustix::fs::statat(&fd, entry.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile | FileType::Directory => {}
                other => {
                    return Err(refuse(format!(
                        "it is a {}, which is never replaced",
                        type_name(other)
                    )));
                }
            },
            Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(io_error(use_, path, e)),
        }
        Ok(Granted {
            shown: path.to_string(),
            held: Some(Arc::new(File::from(fd))),
            entry: Some(entry),
        })
    }

    /// The sources of `patterns` (glob patterns expanded, in order), each file let
    /// through the gate.
    pub(crate) fn sources(&self, patterns: &[String], use_: Use) -> Result<Vec<Source>, SqlError> {
        let mut out = Vec::new();
        for pattern in patterns {
            // nothing outside the allowed directories is listed, not even to expand a
            // pattern (its error would tell which files exist there)
            self.allowed(pattern, use_)?;
            let files = wireload_load::expand_paths(pattern).map_err(|error| SqlError::Load {
                table: pattern.clone(),
                error,
            })?;
            for file in files {
                out.push(match self {
                    FileAccess::Local => Source::File(file),
                    FileAccess::Client { .. } => {
                        let shown = file.display().to_string();
                        self.read(&shown, use_, Kind::File)?.source()
                    }
                });
            }
        }
        Ok(out)
    }
}

/// sysfs's magic number (`statfs(2)`).
const SYSFS_MAGIC: rustix::fs::FsWord = 0x6265_6572;

/// A local session's grant: the path as written.
fn local(path: &str) -> Granted {
    Granted {
        shown: path.to_string(),
        held: None,
        entry: None,
    }
}

/// The refusal of a role without the privilege `use_` needs.
fn unprivileged(use_: Use, path: &str) -> SqlError {
    let (verb, role) = match use_ {
        Use::Read(_) => ("reading", "pg_read_server_files"),
        Use::Write(_) => ("writing", "pg_write_server_files"),
    };
    denied(
        use_,
        path,
        format!("{verb} server files requires superuser or the privileges of the \"{role}\" role"),
    )
}

/// The gate's refusal (SQLSTATE 42501).
fn denied(use_: Use, path: &str, why: String) -> SqlError {
    SqlError::PermissionDenied {
        object: format!("{} '{}'", use_.what(), shown(path)),
        why,
    }
}

/// A path as a message shows it: escaped, at most 256 characters.
fn shown(path: &str) -> String {
    let escaped: String = path.escape_debug().collect();
    match escaped.char_indices().nth(256) {
        Some((cut, _)) => format!("{}...", &escaped[..cut]),
        None => escaped,
    }
}

/// An error of the kernel while opening a path the gate allows.
fn io_error(use_: Use, path: &str, e: rustix::io::Errno) -> SqlError {
    SqlError::File {
        what: use_.what(),
        path: shown(path),
        source: e.into(),
    }
}

/// The allowed directory of `dirs` that `path` lies beneath, and the path relative to it;
/// refused when the path is not text a file can have or lies beneath none of them.
fn beneath<'g>(
    dirs: &'g [AllowedDir],
    path: &str,
    use_: Use,
    verb: &str,
    flag: &str,
) -> Result<(&'g AllowedDir, PathBuf), SqlError> {
    let refuse = |why: String| denied(use_, path, why);
    if path.contains('\0') {
        return Err(refuse("a path cannot contain a NUL byte".into()));
    }
    if path.len() > MAX_PATH {
        return Err(refuse(format!("a path is at most {MAX_PATH} bytes long")));
    }
    if path.is_empty() {
        return Err(refuse("the path is empty".into()));
    }
    let absolute = absolute(Path::new(path));
    // as written first (the kernel resolves its `..` and links beneath the directory),
    // then with `.` and `..` taken lexically
    let normalized = normalize(&absolute);
    for candidate in [&absolute, &normalized] {
        for dir in dirs {
            for name in &dir.names {
                if let Ok(rest) = candidate.strip_prefix(name) {
                    return Ok((dir, rest.to_path_buf()));
                }
            }
        }
    }
    Err(refuse(if dirs.is_empty() {
        format!(
            "this server lets no network client {verb} its files (the operator allows \
             directories with `wireload serve {flag} DIR`)"
        )
    } else {
        format!(
            "it lies outside the directories this server lets network clients {verb} \
             (`wireload serve {flag} DIR`)"
        )
    }))
}

/// Opens `rest` beneath `dir`; a path that resolves outside it is refused.
fn open_beneath(
    dir: &AllowedDir,
    rest: &Path,
    flags: OFlags,
    use_: Use,
    path: &str,
) -> Result<OwnedFd, SqlError> {
    let rest = if rest.as_os_str().is_empty() {
        Path::new(".")
    } else {
        rest
    };
    rustix::fs::openat2(&dir.dir, rest, flags, Mode::empty(), RESOLVE).map_err(|e| match e {
        rustix::io::Errno::XDEV => denied(
            use_,
            path,
            "it resolves outside the allowed directory (through `..`, or a symbolic link \
             that leads out or is absolute)"
                .into(),
        ),
        rustix::io::Errno::LOOP => denied(
            use_,
            path,
            "it resolves through a /proc magic link or too many symbolic links".into(),
        ),
        rustix::io::Errno::NOSYS => denied(
            use_,
            path,
            "this kernel has no openat2 (Linux 5.6), which the server needs to open a \
             client's files safely"
                .into(),
        ),
        e => io_error(use_, path, e),
    })
}

/// Refuses a directory holding a symbolic link: the files of a directory are opened by
/// name beneath it, and a link could lead out.
fn no_links_in(dir: &OwnedFd, use_: Use, path: &str) -> Result<(), SqlError> {
    let listing = format!("/proc/self/fd/{}", dir.as_raw_fd());
    let entries = std::fs::read_dir(&listing).map_err(|e| SqlError::File {
        what: use_.what(),
        path: shown(path),
        source: e,
    })?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_symlink()) {
            return Err(denied(
                use_,
                path,
                format!(
                    "it holds a symbolic link ({}), which could lead outside it",
                    entry.file_name().to_string_lossy()
                ),
            ));
        }
    }
    Ok(())
}

/// `path` made absolute against the process's working directory.
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        return path.to_path_buf();
    }
    std::env::current_dir().map_or_else(|_| path.to_path_buf(), |cwd| cwd.join(path))
}

/// `path` with `.` dropped and each `..` taking away the name before it (lexically, links
/// not followed).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// A file type as messages name it.
fn type_name(t: FileType) -> &'static str {
    match t {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symbolic link",
        FileType::Fifo => "FIFO",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "special file",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SqlState;

    const INSUFFICIENT_PRIVILEGE: SqlState = SqlState::INSUFFICIENT_PRIVILEGE;

    fn client(read: &[&Path], write: &[&Path]) -> FileAccess {
        let own = |d: &[&Path]| d.iter().map(|p| p.to_path_buf()).collect::<Vec<_>>();
        FileAccess::Client {
            gate: Arc::new(FileGate::new(&own(read), &own(write)).unwrap()),
            read: true,
            write: true,
        }
    }

    fn refused(r: Result<Granted, SqlError>) -> String {
        let e = r.expect_err("refused");
        assert_eq!(e.sqlstate(), INSUFFICIENT_PRIVILEGE, "{e}");
        e.to_string()
    }

    const READ: Use = Use::Read("COPY FROM");
    const WRITE: Use = Use::Write("COPY TO");

    #[test]
    fn reads_only_beneath_an_allowed_directory() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("data");
        std::fs::create_dir(&allowed).unwrap();
        std::fs::write(allowed.join("a.csv"), "1\n").unwrap();
        std::fs::write(root.path().join("secret.csv"), "s\n").unwrap();
        std::os::unix::fs::symlink(root.path().join("secret.csv"), allowed.join("out.csv"))
            .unwrap();
        std::os::unix::fs::symlink("a.csv", allowed.join("in.csv")).unwrap();
        std::os::unix::fs::symlink(allowed.join("a.csv"), allowed.join("abs.csv")).unwrap();
        let access = client(&[&allowed], &[]);
        let inside = |p: PathBuf| p.display().to_string();
        let granted = access
            .read(&inside(allowed.join("a.csv")), READ, Kind::File)
            .unwrap();
        assert_eq!(std::fs::read(granted.path()).unwrap(), b"1\n");
        // a relative link that stays inside is followed; an absolute one is not
        assert!(
            access
                .read(&inside(allowed.join("in.csv")), READ, Kind::File)
                .is_ok()
        );
        for (path, why) in [
            (inside(root.path().join("secret.csv")), "outside"),
            (inside(allowed.join("../secret.csv")), "outside"),
            (inside(allowed.join("out.csv")), "resolves outside"),
            (inside(allowed.join("abs.csv")), "absolute"),
            ("/proc/self/environ".into(), "outside"),
            ("/etc/passwd".into(), "outside"),
            (inside(allowed.join("a\0.csv")), "NUL"),
            (
                format!("{}/{}", allowed.display(), "x".repeat(5000)),
                "at most",
            ),
            (inside(allowed.clone()), "directory"),
        ] {
            let e = refused(access.read(&path, READ, Kind::File));
            assert!(e.contains(why), "{path:.80}: {e}");
            assert!(e.contains("COPY FROM"), "{e}");
        }
    }

    #[test]
    fn no_directory_no_privilege_no_file() {
        let root = tempfile::tempdir().unwrap();
        let file = root.path().join("a.csv");
        std::fs::write(&file, "1\n").unwrap();
        let path = file.display().to_string();
        let e = refused(client(&[], &[]).read(&path, READ, Kind::File));
        assert!(e.contains("lets no network client read"), "{e}");
        let unprivileged = FileAccess::Client {
            gate: Arc::new(FileGate::new(&[root.path().into()], &[root.path().into()]).unwrap()),
            read: false,
            write: false,
        };
        let e = refused(unprivileged.read(&path, READ, Kind::File));
        assert!(e.contains("pg_read_server_files"), "{e}");
        let e = refused(unprivileged.write(&path, WRITE));
        assert!(e.contains("pg_write_server_files"), "{e}");
        // a local session reads what its user may
        assert_eq!(
            FileAccess::Local
                .read(&path, READ, Kind::File)
                .unwrap()
                .path(),
            file
        );
    }

    #[test]
    fn devices_fifos_and_proc_are_refused_even_when_allowed() {
        let root = tempfile::tempdir().unwrap();
        let fifo = root.path().join("fifo");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        let access = client(&[root.path(), Path::new("/dev"), Path::new("/proc")], &[]);
        let e = refused(access.read(&fifo.display().to_string(), READ, Kind::File));
        assert!(e.contains("FIFO"), "{e}");
        let e = refused(access.read("/dev/zero", READ, Kind::File));
        assert!(e.contains("character device"), "{e}");
        let e = refused(access.read("/proc/self/environ", READ, Kind::File));
        assert!(e.contains("/proc"), "{e}");
    }

    #[test]
    fn writes_hold_the_parent_and_never_follow_a_link() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        std::fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink("/tmp", out.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.path().join("x"), out.join("link.csv")).unwrap();
        let access = client(&[], &[&out]);
        let target = access
            .write(&out.join("r.csv").display().to_string(), WRITE)
            .unwrap();
        std::fs::write(target.path(), "ok").unwrap();
        assert_eq!(std::fs::read(out.join("r.csv")).unwrap(), b"ok");
        for (path, why) in [
            (out.join("escape/r.csv"), "resolves outside"),
            (out.join("../r.csv"), "outside"),
            (out.join("link.csv"), "symbolic link"),
            (out.clone(), "names no file"),
        ] {
            let e = refused(access.write(&path.display().to_string(), WRITE));
            assert!(e.contains(why), "{}: {e}", path.display());
        }
    }

    #[test]
    fn a_swapped_directory_does_not_move_what_was_granted() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("data");
        std::fs::create_dir_all(allowed.join("sub")).unwrap();
        std::fs::write(root.path().join("secret"), "s").unwrap();
        let access = client(&[], &[&allowed]);
        let granted = access
            .write(&allowed.join("sub/r.csv").display().to_string(), WRITE)
            .unwrap();
        // the checked directory is swapped for a link out before the write
        std::fs::rename(allowed.join("sub"), allowed.join("old")).unwrap();
        std::os::unix::fs::symlink(root.path(), allowed.join("sub")).unwrap();
        std::fs::write(granted.path(), "w").unwrap();
        assert_eq!(std::fs::read(allowed.join("old/r.csv")).unwrap(), b"w");
        assert!(!root.path().join("r.csv").exists());
    }

    #[test]
    fn globs_are_checked_before_they_are_expanded() {
        let root = tempfile::tempdir().unwrap();
        let allowed = root.path().join("data");
        std::fs::create_dir(&allowed).unwrap();
        std::fs::write(allowed.join("a.csv"), "1\n").unwrap();
        std::fs::write(allowed.join("b.csv"), "2\n").unwrap();
        std::os::unix::fs::symlink(root.path(), allowed.join("up")).unwrap();
        std::fs::write(root.path().join("c.csv"), "3\n").unwrap();
        let access = client(&[&allowed], &[]);
        let pattern = |p: PathBuf| vec![p.display().to_string()];
        let sources = access
            .sources(&pattern(allowed.join("*.csv")), READ)
            .unwrap();
        assert_eq!(sources.len(), 2);
        for p in [root.path().join("*.csv"), allowed.join("up/*.csv")] {
            let e = access.sources(&pattern(p), READ).unwrap_err();
            assert_eq!(e.sqlstate(), INSUFFICIENT_PRIVILEGE, "{e}");
        }
    }

    #[test]
    fn import_directories_hold_no_links() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("export");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("manifest.json"), "{}").unwrap();
        let access = client(&[root.path()], &[]);
        let path = dir.display().to_string();
        assert!(access.read(&path, READ, Kind::Directory).is_ok());
        std::os::unix::fs::symlink("/etc/passwd", dir.join("t.arrow")).unwrap();
        let e = refused(access.read(&path, READ, Kind::Directory));
        assert!(e.contains("symbolic link"), "{e}");
    }
}
