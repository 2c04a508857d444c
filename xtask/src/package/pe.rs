//! The PE side of packaging (Windows DLLs and EXEs), for
//! [`crate::platform::BinaryFormat::Pe`]: NOT IMPLEMENTED YET. Windows builds
//! stop after the plan (`pipeline::refuse_unsupported_host`), so nothing reads
//! a PE file today; this names the place the reader goes, beside
//! [`crate::package::elf`], the ELF reader.

use std::path::Path;

use anyhow::{bail, Result};

/// What the packaging checks will need from a PE file (its imported DLLs, as
/// [`crate::package::elf::ElfInfo`] has NEEDED): nothing is read yet.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeInfo {}

/// Not implemented: always an error that says so.
pub fn read(path: &Path) -> Result<PeInfo> {
    bail!(
        "{}: reading PE files (Windows DLLs) is not implemented yet: Windows builds stop after the plan",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_files_are_not_read_yet_and_say_so() {
        let e = read(Path::new("llama.dll")).unwrap_err();
        assert!(e.to_string().contains("not implemented yet"), "{e}");
    }
}
