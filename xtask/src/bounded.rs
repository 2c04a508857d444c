//! Reading a file as untrusted input: a regular file only (never a FIFO, a device, a
//! socket or a directory, nor a link to one), opened without blocking and checked again
//! once open, and read no further than a cap. Manifests, keys, listings and the files
//! `inspect` and `verify` are given all go through here.

use std::path::Path;

use anyhow::{Context, Result};

/// The bytes of the regular file `path`, of at most `max` bytes; `what` it should be
/// (`a manifest`) for the error past `max`.
pub fn read_capped(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    let (file, meta) = open_regular(path)?;
    let limit = if max >= 1 << 20 {
        format!("{} MiB", max >> 20)
    } else {
        format!("{max} bytes")
    };
    let too_big = |size: u64| {
        anyhow::anyhow!(
            "{} is {size} bytes, over the {limit} {what} may hold: it is not {what} of this tool, and was not read",
            path.display(),
        )
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut data = Vec::with_capacity(meta.len() as usize);
    file.take(max + 1)
        .read_to_end(&mut data)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if data.len() as u64 > max {
        // It grew while read.
        return Err(too_big(data.len() as u64));
    }
    Ok(data)
}

/// A path that cannot be read, in plain words (`no such file or directory: <path>`) with
/// what to do, instead of the I/O library's "failed to query resolved metadata".
pub fn not_readable(path: &Path, e: &std::io::Error) -> anyhow::Error {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::NotFound => anyhow::anyhow!(
            "no such file or directory: {}: check the path (an artifact is in dist/, its manifest beside it as `<artifact>.manifest.json`)",
            path.display()
        ),
        ErrorKind::PermissionDenied => anyhow::anyhow!(
            "permission denied: {}: give a file you can read",
            path.display()
        ),
        // fs-err's wrapper says "failed to query resolved metadata"; the OS's words are
        // its source.
        _ => {
            let os = std::error::Error::source(e).map_or_else(|| e.to_string(), |s| s.to_string());
            anyhow::anyhow!("cannot read {}: {os}", path.display())
        }
    }
}

/// What a file that is not a regular file is, for messages.
fn kind_of(t: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// Opens `path` (following links) for reading only when it is a regular file: a FIFO,
/// a device, a socket, a directory, or a link to one is refused, naming it, before it
/// is opened (opening a FIFO waits for a writer; a device may never end). The opened
/// file is checked again (it is the file that was looked at, and still regular), and
/// opened without blocking, so a FIFO swapped in between cannot hang the read.
/// Returns the file and its metadata.
pub fn open_regular(path: &Path) -> Result<(fs_err::File, std::fs::Metadata)> {
    let refuse = |t: std::fs::FileType| {
        anyhow::anyhow!(
            "{} is {}, not a regular file: only regular files are read (a FIFO or a device could hang the tool or never end); give the file itself",
            path.display(),
            kind_of(t)
        )
    };
    let before = fs_err::metadata(path).map_err(|e| not_readable(path, &e))?;
    if !before.file_type().is_file() {
        return Err(refuse(before.file_type()));
    }
    let mut opts = fs_err::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(nix::libc::O_NONBLOCK);
    }
    let file = opts.open(path)?;
    let meta = file.metadata()?;
    if !meta.file_type().is_file() {
        return Err(refuse(meta.file_type()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        anyhow::ensure!(
            (meta.dev(), meta.ino()) == (before.dev(), before.ino()),
            "{} changed while it was opened: run again, and make sure nothing else writes there",
            path.display()
        );
    }
    Ok((file, meta))
}
