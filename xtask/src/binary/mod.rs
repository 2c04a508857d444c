//! Readers of the binary formats the tool ships and checks: ELF (`elf.rs`: NEEDED,
//! SONAME, RUNPATH, symbol versions, the C++ runtime, `e_machine` as an `Arch`, device
//! code in `.nv_fatbin`) and PE (`pe.rs`: machine, DLL or EXE, imports and exports,
//! device code in `.nv_fatb`). A leaf: packaging, verify, inspect and the hermetic CUDA's
//! import libraries all read binaries through it.

pub mod elf;
pub mod pe;
