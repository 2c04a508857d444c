#!/usr/bin/env python3
"""Smoke test for an installed llama-cpp-python: load a GGUF model and greedily
generate exactly N tokens.

Usage:
    smoke_llama_cpp_python.py MODEL.gguf [--n-gpu-layers N] [--tokens 16]
                              [--n-ctx 128] [--prompt TEXT] [--json OUT]
                              [--require-gpu-offload] [--no-highlevel-check]

Prints (stdout):
    LLAMA_CPP_VERSION: <llama_cpp.__version__>
    LLAMA_CPP_FILE: <llama_cpp.__file__>
    GPU_OFFLOAD_SUPPORTED: true|false
    PROMPT_TOKENS: ...
    TOKENS: <id> <id> ...          (exactly N generated token ids)
    TOKENS_PER_S: <float>          (generation only, prompt excluded)
    GGML_MODULES: <file> ...       (the ggml backend modules mapped after import)
    SMOKE_OK

How: the model is loaded with the high-level `Llama(...)` class (as users do),
the prompt is evaluated with `Llama.eval`, and each token is sampled with a
low-level sampler chain [logit_bias(all EOG tokens -> -inf), greedy], so
generation can never stop early on EOS/EOT.  Then, unless --no-highlevel-check,
`Llama.generate(temp=0, top_k=1)` is run on the same prompt and must yield the
same ids (up to the first EOG token it produces, which the masked run could not
pick), and `Llama.create_completion(temperature=0)` must run (its text is
printed as COMPLETION_TEXT; it may stop early on EOS).  Works with the llama-cpp-python 0.3.16 .. 0.3.36 APIs.

Exit status: 0 on success, 1 on any failure (import, load, generation, fewer
than N tokens, mismatch between the two generation paths, ...).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import sys
import time
import traceback

DEFAULT_PROMPT = "The quick brown fox jumps over the lazy dog. Once upon a time"


def log(msg: str) -> None:
    print(msg, flush=True)


def run(args) -> dict:
    result: dict = {"ok": False, "model": os.path.abspath(args.model), "n_gpu_layers": args.n_gpu_layers,
                    "n_tokens_requested": args.tokens}

    t0 = time.perf_counter()
    import llama_cpp  # noqa: E402
    from llama_cpp import Llama

    result["llama_cpp_version"] = getattr(llama_cpp, "__version__", "?")
    result["llama_cpp_file"] = os.path.abspath(llama_cpp.__file__)
    log(f"LLAMA_CPP_VERSION: {result['llama_cpp_version']}")
    log(f"LLAMA_CPP_FILE: {result['llama_cpp_file']}")
    if os.environ.get("LLAMA_CPP_LIB_PATH"):
        log(f"LLAMA_CPP_LIB_PATH: {os.environ['LLAMA_CPP_LIB_PATH']}")
    # Which ggml modules the import loaded (runtime-dispatched CPU variant, CUDA).
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from ggml_modules import mapped_modules
    mods = mapped_modules()
    result["ggml_modules"] = mods
    log(f"GGML_MODULES: {' '.join(mods)}")

    ll = llama_cpp.llama_cpp  # low-level ctypes bindings
    gpu = bool(ll.llama_supports_gpu_offload())
    result["gpu_offload_supported"] = gpu
    log(f"GPU_OFFLOAD_SUPPORTED: {str(gpu).lower()}")
    try:
        sysinfo = ll.llama_print_system_info()
        sysinfo = sysinfo.decode("utf-8", "replace") if isinstance(sysinfo, bytes) else str(sysinfo)
        result["system_info"] = sysinfo.strip()
        log(f"SYSTEM_INFO: {result['system_info']}")
    except Exception as e:  # informational only
        log(f"SYSTEM_INFO: <unavailable: {e}>")
    if args.require_gpu_offload and not gpu:
        raise RuntimeError("--require-gpu-offload given but llama_supports_gpu_offload() is false")
    result["import_s"] = round(time.perf_counter() - t0, 4)

    if not os.path.isfile(args.model):
        raise FileNotFoundError(args.model)

    t0 = time.perf_counter()
    llm = Llama(
        model_path=args.model,
        n_ctx=args.n_ctx,
        n_gpu_layers=args.n_gpu_layers,
        seed=0,
        verbose=args.verbose,
    )
    result["load_s"] = round(time.perf_counter() - t0, 4)
    log(f"LOAD_S: {result['load_s']:.3f}")

    vocab = ll.llama_model_get_vocab(llm.model)
    n_vocab = int(llm.n_vocab())
    eog = [t for t in range(n_vocab) if ll.llama_vocab_is_eog(vocab, t)]
    result["n_vocab"] = n_vocab
    result["eog_token_ids"] = eog

    prompt_tokens = llm.tokenize(args.prompt.encode("utf-8"), add_bos=True, special=False)
    if not prompt_tokens:
        raise RuntimeError("prompt tokenized to zero tokens")
    result["prompt_tokens"] = list(map(int, prompt_tokens))
    log("PROMPT_TOKENS: " + " ".join(map(str, prompt_tokens)))
    if len(prompt_tokens) + args.tokens > llm.n_ctx():
        raise RuntimeError(f"prompt ({len(prompt_tokens)}) + tokens ({args.tokens}) exceeds n_ctx {llm.n_ctx()}")

    # --- sampler chain: mask EOG, then greedy ---
    chain = ll.llama_sampler_chain_init(ll.llama_sampler_chain_default_params())
    if not chain:
        raise RuntimeError("llama_sampler_chain_init returned NULL")
    try:
        if eog:
            biases = (ll.llama_logit_bias * len(eog))()
            for i, t in enumerate(eog):
                biases[i].token = t
                biases[i].bias = -math.inf
            ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_logit_bias(n_vocab, len(eog), biases))
        ll.llama_sampler_chain_add(chain, ll.llama_sampler_init_greedy())

        llm.reset()
        t0 = time.perf_counter()
        llm.eval(prompt_tokens)
        result["prompt_eval_s"] = round(time.perf_counter() - t0, 4)

        generated: list[int] = []
        t0 = time.perf_counter()
        for i in range(args.tokens):
            tok = int(ll.llama_sampler_sample(chain, llm.ctx, -1))
            if tok < 0 or tok >= n_vocab:
                raise RuntimeError(f"sampled invalid token id {tok}")
            if tok in eog:
                raise RuntimeError(f"sampled EOG token {tok} despite -inf bias")
            generated.append(tok)
            if i + 1 < args.tokens:
                llm.eval([tok])
        gen_s = time.perf_counter() - t0
    finally:
        ll.llama_sampler_free(chain)

    result["tokens"] = generated
    result["gen_s"] = round(gen_s, 4)
    tps = len(generated) / gen_s if gen_s > 0 else float("inf")
    result["tokens_per_s"] = round(tps, 2)
    try:
        result["text"] = llm.detokenize(generated).decode("utf-8", "replace")
    except Exception as e:
        result["text"] = f"<detokenize failed: {e}>"
    log("TOKENS: " + " ".join(map(str, generated)))
    log(f"TOKENS_PER_S: {tps:.2f}")
    log(f"TEXT: {result['text']!r}")

    if len(generated) < args.tokens:
        raise RuntimeError(f"only {len(generated)} of {args.tokens} tokens generated")

    # --- cross-check with the high-level generator (what create_completion uses) ---
    if not args.no_highlevel_check:
        llm.reset()
        hl: list[int] = []
        t0 = time.perf_counter()
        for tok in llm.generate(prompt_tokens, top_k=1, top_p=1.0, min_p=0.0, temp=0.0, repeat_penalty=1.0):
            tok = int(tok)
            if tok in eog or len(hl) >= args.tokens:
                break
            hl.append(tok)
        result["highlevel_tokens"] = hl
        result["highlevel_s"] = round(time.perf_counter() - t0, 4)
        log("HIGHLEVEL_TOKENS: " + " ".join(map(str, hl)))
        if hl != generated[: len(hl)]:
            raise RuntimeError(f"Llama.generate greedy ids {hl} differ from low-level greedy ids {generated}")
        if len(hl) < args.tokens:
            log(f"note: Llama.generate hit EOG after {len(hl)} tokens (masked run continued)")

        # create_completion: the path most users take (may stop early on EOS).
        llm.reset()
        t0 = time.perf_counter()
        comp = llm.create_completion(args.prompt, max_tokens=args.tokens, temperature=0.0, top_k=1,
                                     top_p=1.0, min_p=0.0, repeat_penalty=1.0, seed=0)
        result["completion_s"] = round(time.perf_counter() - t0, 4)
        ctext = comp["choices"][0]["text"]
        usage = comp.get("usage", {})
        result["completion_text"] = ctext
        result["completion_usage"] = usage
        log(f"COMPLETION_TEXT: {ctext!r}")
        if usage.get("completion_tokens", 0) < 1 and len(hl) > 0:
            raise RuntimeError(f"create_completion produced no tokens: {comp}")

    del llm
    result["ok"] = True
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", help="path to a .gguf model")
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="layers to offload (default 0; -1 = all)")
    ap.add_argument("--tokens", type=int, default=16, help="tokens to generate (default 16)")
    ap.add_argument("--n-ctx", type=int, default=128, help="context size (default 128)")
    ap.add_argument("--prompt", default=DEFAULT_PROMPT, help="prompt text")
    ap.add_argument("--json", dest="json_out", default=None, help="write results as JSON to this file")
    ap.add_argument("--require-gpu-offload", action="store_true",
                    help="fail unless llama_supports_gpu_offload() is true")
    ap.add_argument("--no-highlevel-check", action="store_true",
                    help="skip the Llama.generate() cross-check")
    ap.add_argument("--verbose", action="store_true", help="Llama(verbose=True): show llama.cpp logs")
    args = ap.parse_args()
    if args.tokens < 1:
        ap.error("--tokens must be >= 1")

    t_start = time.perf_counter()
    try:
        result = run(args)
        rc = 0
    except BaseException as e:  # noqa: BLE001 - report everything, incl. SystemExit from deps
        traceback.print_exc()
        print(f"SMOKE_FAIL: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        result = {"ok": False, "error": f"{type(e).__name__}: {e}", "model": args.model}
        rc = 1
    result["total_s"] = round(time.perf_counter() - t_start, 4)
    if args.json_out:
        try:
            with open(args.json_out, "w") as f:
                json.dump(result, f, indent=2)
                f.write("\n")
        except OSError as e:
            print(f"SMOKE_FAIL: cannot write {args.json_out}: {e}", file=sys.stderr)
            rc = 1
    if rc == 0:
        log("SMOKE_OK")
    return rc


if __name__ == "__main__":
    sys.exit(main())
