#!/usr/bin/env python3
"""Generate a tiny, deterministic llama-architecture GGUF model with random weights.

Usage:
    make_tiny_gguf.py OUT.gguf [--seed N] [--gguf-py PATH/TO/gguf-py]

The gguf Python package is taken from --gguf-py, else from $GGUF_PY, else from
whatever `import gguf` finds.  Point it at the `vendor/llama.cpp/gguf-py`
directory of a llama-cpp-python sdist (or a llama.cpp checkout).

Only numpy and gguf-py are needed (gguf-py's optional `yaml` import is stubbed
out when PyYAML is not installed; this script never uses it).

Model: llama arch, 2 layers, n_embd 64, 4 heads (head dim 16), n_ff 128,
context 128, F32 tensors (~0.5 MB).  All matrix rows are multiples of 32
elements, so llama-quantize can produce Q8_0 / Q4_0 without fallbacks.

Tokenizer: SentencePiece-style ("llama") vocab of 295 tokens:
    0 <unk> (UNKNOWN), 1 <s> (BOS, CONTROL), 2 </s> (EOS, CONTROL),
    3..258 byte tokens <0x00>..<0xFF> (BYTE) -> any UTF-8 text tokenizes,
    259.. "▁", "a".."z", ".", "," (NORMAL), plus a few merged pieces.
The output rows of control and non-printable byte tokens are zero, so greedy
decoding never produces EOS and always yields printable ASCII text.
The output is byte-identical for a given seed (also across gguf-py 0.17 / 0.19).
"""

from __future__ import annotations

import argparse
import os
import sys
import types

N_LAYER = 2
N_EMBD = 64
N_HEAD = 4
N_HEAD_KV = 4
N_FF = 128
# Training context.  Newer llama.cpp pads a requested n_ctx of 128 up to 256 and
# then prints a harmless "n_ctx_seq (256) > n_ctx_train (128)" warning; with 256
# here the older one warns "n_ctx_per_seq (128) < n_ctx_train (256)" instead.
N_CTX = 128
RMS_EPS = 1e-5
ROPE_BASE = 10000.0


def import_gguf(gguf_py: str | None):
    path = gguf_py or os.environ.get("GGUF_PY")
    if path:
        path = os.path.abspath(path)
        if not os.path.isdir(os.path.join(path, "gguf")):
            sys.exit(f"error: {path} has no 'gguf' package directory (expected the gguf-py dir)")
        sys.path.insert(0, path)
    # gguf/metadata.py does `import yaml` at import time; we don't use it.
    try:
        import yaml  # noqa: F401
    except ImportError:
        stub = types.ModuleType("yaml")

        def _unavailable(*_a, **_k):
            raise RuntimeError("PyYAML is not installed (stub module from make_tiny_gguf.py)")

        stub.safe_load = _unavailable  # type: ignore[attr-defined]
        stub.load = _unavailable  # type: ignore[attr-defined]
        sys.modules["yaml"] = stub
    try:
        import gguf
    except ImportError as e:
        sys.exit(f"error: cannot import gguf ({e}); pass --gguf-py PATH/TO/gguf-py or set GGUF_PY")

    if path and not os.path.abspath(gguf.__file__).startswith(path):
        sys.exit(f"error: imported gguf from {gguf.__file__}, not from {path}")
    return gguf


def build_vocab(gguf):
    TT = gguf.TokenType
    tokens: list[str] = []
    scores: list[float] = []
    types_: list[int] = []

    def add(text: str, score: float, ttype):
        tokens.append(text)
        scores.append(score)
        types_.append(int(ttype))

    add("<unk>", 0.0, TT.UNKNOWN)
    add("<s>", 0.0, TT.CONTROL)
    add("</s>", 0.0, TT.CONTROL)
    for b in range(256):
        add(f"<0x{b:02X}>", 0.0, TT.BYTE)
    pieces = ["\u2581"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + [".", ","]
    # A few merged pieces so the SPM merge path is exercised
    # (each is reachable through pairs of pieces already in the vocab).
    pieces += ["\u2581t", "he", "\u2581the", "\u2581a", "in", "er", "on"]
    for i, p in enumerate(pieces):
        # SPM merges by highest score; longer pieces get higher scores.
        add(p, -1000.0 + 10.0 * len(p) - 0.01 * i, TT.NORMAL)
    assert len(set(tokens)) == len(tokens)
    return tokens, scores, types_


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", help="output .gguf path")
    ap.add_argument("--seed", type=int, default=0, help="RNG seed for the weights (default 0)")
    ap.add_argument("--gguf-py", default=None, help="path to the gguf-py directory (default: $GGUF_PY)")
    ap.add_argument("--shape", default=None, metavar="LAYERS,EMBD,HEADS,FF",
                    help="a bigger model for benchmarks (default: the tiny 2,64,4,128); "
                         "16,2048,16,5632 is a 0.82B llama-shaped model")
    args = ap.parse_args()
    global N_LAYER, N_EMBD, N_HEAD, N_HEAD_KV, N_FF
    if args.shape:
        N_LAYER, N_EMBD, N_HEAD, N_FF = (int(x) for x in args.shape.split(","))
        N_HEAD_KV = N_HEAD

    import numpy as np

    gguf = import_gguf(args.gguf_py)

    tokens, scores, ttypes = build_vocab(gguf)
    n_vocab = len(tokens)
    head_dim = N_EMBD // N_HEAD

    arch = "llama"
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    w = gguf.GGUFWriter(args.out, arch)

    w.add_name(f"tiny-random-llama-seed{args.seed}")
    w.add_file_type(int(gguf.LlamaFileType.ALL_F32))
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(ROPE_BASE)
    w.add_layer_norm_rms_eps(RMS_EPS)
    w.add_vocab_size(n_vocab)

    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(ttypes)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    rng = np.random.default_rng(args.seed)

    def mat(rows: int, cols: int, std: float):
        # numpy shape (rows, cols) == ggml ne = [cols, rows]
        return (rng.standard_normal((rows, cols)) * std).astype(np.float32)

    def norm(n: int):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)

    s = 1.0 / np.sqrt(N_EMBD)
    w.add_tensor("token_embd.weight", mat(n_vocab, N_EMBD, 1.0))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", norm(N_EMBD))
        w.add_tensor(p + "attn_q.weight", mat(N_HEAD * head_dim, N_EMBD, s))
        w.add_tensor(p + "attn_k.weight", mat(N_HEAD_KV * head_dim, N_EMBD, s))
        w.add_tensor(p + "attn_v.weight", mat(N_HEAD_KV * head_dim, N_EMBD, s))
        w.add_tensor(p + "attn_output.weight", mat(N_EMBD, N_HEAD * head_dim, s))
        w.add_tensor(p + "ffn_norm.weight", norm(N_EMBD))
        w.add_tensor(p + "ffn_gate.weight", mat(N_FF, N_EMBD, s))
        w.add_tensor(p + "ffn_up.weight", mat(N_FF, N_EMBD, s))
        w.add_tensor(p + "ffn_down.weight", mat(N_EMBD, N_FF, 1.0 / np.sqrt(N_FF)))
    w.add_tensor("output_norm.weight", norm(N_EMBD))
    out_w = mat(n_vocab, N_EMBD, 4.0 * s)
    # Zero the output rows of control tokens and non-printable / non-ASCII byte
    # tokens: their logit is then exactly 0 while the max over the ~130 other
    # (random) logits is positive, so greedy decoding never picks EOS and
    # always emits printable ASCII text (clean for CLI / server / JSON checks).
    for tid, text in enumerate(tokens):
        if ttypes[tid] == int(gguf.TokenType.BYTE):
            b = int(text[3:5], 16)
            if 0x20 <= b <= 0x7E:
                continue
        elif ttypes[tid] == int(gguf.TokenType.NORMAL):
            continue
        out_w[tid, :] = 0.0
    w.add_tensor("output.weight", out_w)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    size = os.path.getsize(args.out)
    print(f"wrote {args.out}: {size} bytes, n_vocab={n_vocab}, gguf-py from {os.path.dirname(gguf.__file__)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
