#!/usr/bin/env python3
"""Loads ggml's backend modules from DIR the way the tools and the wheel do
(ggml_backend_load_all_from_path) and prints the ones the process then maps:

    GGML_MODULES: libggml-cpu-haswell.so

ggml opens every libggml-cpu-*.so to ask its score and keeps only the best, so the
line names the CPU variant this CPU runs. Linux only (/proc/self/maps).
Usage: ggml_modules.py DIR
(smoke_llama_cpp_python.py imports `mapped_modules` for the same line after `import llama_cpp`.)
"""
import ctypes
import os
import sys


def mapped_modules() -> list[str]:
    """The ggml backend modules (CPU variants, CUDA) this process maps; [] without /proc."""
    try:
        with open("/proc/self/maps") as f:
            return sorted({ln.rsplit("/", 1)[-1].strip() for ln in f if "/libggml-cpu" in ln or "/libggml-cuda" in ln})
    except OSError:
        return []


def main() -> None:
    d = os.path.abspath(sys.argv[1])
    ggml = ctypes.CDLL(os.path.join(d, "libggml.so"))
    ggml.ggml_backend_load_all_from_path.argtypes = [ctypes.c_char_p]
    ggml.ggml_backend_load_all_from_path.restype = None
    ggml.ggml_backend_load_all_from_path(d.encode("utf-8"))
    print("GGML_MODULES: " + " ".join(mapped_modules()), flush=True)


if __name__ == "__main__":
    main()
