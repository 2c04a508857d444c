#!/usr/bin/env python3
"""Smoke test for a directory of llama.cpp binaries (an unpacked release archive).

Usage:
    smoke_llama_cli.py BIN_DIR MODEL.gguf [--n-gpu-layers N] [--tokens 16]
                       [--json OUT] [--work-dir DIR] [--threads N] [--timeout S]
                       [--quant-type Q8_0] [--skip-cli] [--skip-server]
                       [--skip-quantize] [--skip-bench] [--expect-tokens "1 2 .."]
                       [--strict] [--run-with "PROGRAM ARGS"]

Steps (each one's binary is searched for under BIN_DIR, also in bin/ or
build/bin/ subfolders; where llama-X is missing but newer llama.cpp's unified
`llama` binary is there, `llama <subcommand>` is used; shared libraries found
under BIN_DIR are put on LD_LIBRARY_PATH / DYLD_LIBRARY_PATH / PATH):

 1. CLI greedy generation, non-interactive:
      llama-completion (newer llama.cpp, where llama-cli is chat-only), else the
      unified `llama completion`, else llama-cli -no-cnv (older llama.cpp, e.g. the one vendored in
      llama-cpp-python 0.3.16).  Flags: -m -p -n -c -ngl -t --temp 0 --top-k 1
      --seed 0 --ignore-eos --no-display-prompt --simple-io, stdin=/dev/null.
    Prints CLI_TEXT and CLI_TOKENS_PER_S (parsed from the perf log).
 2. llama-server on 127.0.0.1:<free port> (-np 1 --no-webui), waits for
    /health, POSTs /completion {temperature 0, top_k 1, n_predict N,
    ignore_eos, return_tokens}, then stops the server.
    Prints TOKENS (the generated ids), TOKENS_PER_S, SERVER_TEXT.
    Fails if fewer than N tokens come back.
 3. llama-quantize MODEL WORK/MODEL-<type>.gguf <type> (default Q8_0), then a
    short CLI generation (or server, without CLI) on the quantized model.
 4. llama-bench -m MODEL -p 8 -n 8 -r 1 -o json; prints BENCH_PP_TS / BENCH_TG_TS.

--run-with runs every tool through a program (split as the shell would), e.g. another
CPU's under qemu-user: --run-with "qemu-aarch64 -L /arm64/root -cpu cortex-a57".

CLI text vs server text (and server ids vs --expect-tokens) mismatches are
reported as MISMATCH lines; with --strict they fail the run.  Any other error,
missing binary (unless that step is skipped) or timeout exits 1.
Only the Python standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import urllib.error
import urllib.request

DEFAULT_PROMPT = "The quick brown fox jumps over the lazy dog. Once upon a time"
EXE = ".exe" if os.name == "nt" else ""


def log(msg: str) -> None:
    print(msg, flush=True)


class SmokeError(RuntimeError):
    pass


# ----------------------------------------------------------------------------
# binary discovery / environment
# ----------------------------------------------------------------------------

def find_binary(root: str, name: str) -> str | None:
    cands = [os.path.join(root, name + EXE)]
    for sub in ("bin", os.path.join("build", "bin"), os.path.join("bin", "Release"), "Release"):
        cands.append(os.path.join(root, sub, name + EXE))
    for c in cands:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    # shallow recursive search (archives sometimes have one top-level folder)
    root_depth = root.rstrip(os.sep).count(os.sep)
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.count(os.sep) - root_depth >= 3:
            dirnames[:] = []
        if name + EXE in filenames:
            p = os.path.join(dirpath, name + EXE)
            if os.access(p, os.X_OK):
                return p
    return None


def lib_dirs(root: str) -> list[str]:
    out: list[str] = []
    root_depth = root.rstrip(os.sep).count(os.sep)
    for dirpath, dirnames, filenames in os.walk(root):
        if dirpath.count(os.sep) - root_depth >= 3:
            dirnames[:] = []
        if any(re.search(r"\.(so(\.\d+)*|dylib|dll)$", f) for f in filenames):
            out.append(dirpath)
    return sorted(out)


def make_env(root: str) -> dict:
    env = dict(os.environ)
    dirs = lib_dirs(root)
    for var in ("LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "PATH"):
        if var == "DYLD_LIBRARY_PATH" and sys.platform != "darwin":
            continue
        if var == "PATH" and os.name != "nt":
            continue
        parts = dirs + ([env[var]] if env.get(var) else [])
        if parts:
            env[var] = os.pathsep.join(parts)
    # never let llama.cpp try to download anything
    env.setdefault("LLAMA_ARG_OFFLINE", "1")
    return env


def run_cmd(cmd: list[str], env: dict, timeout: float, what: str) -> subprocess.CompletedProcess:
    log(f"RUN[{what}]: " + " ".join(_q(c) for c in cmd))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        _dump(what, e.stdout, e.stderr)
        raise SmokeError(f"{what}: timed out after {timeout}s")
    dt = time.perf_counter() - t0
    log(f"{what.upper()}_RC: {p.returncode} ({dt:.2f}s)")
    if p.returncode != 0:
        _dump(what, p.stdout, p.stderr)
        raise SmokeError(f"{what}: exit status {p.returncode}")
    return p


def _q(s: str) -> str:
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def _dump(what: str, out, err, limit: int = 4000) -> None:
    for name, data in (("stdout", out), ("stderr", err)):
        if data:
            text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
            sys.stderr.write(f"----- {what} {name} (last {limit} chars) -----\n{text[-limit:]}\n")
    sys.stderr.flush()


def version_of(prefix: list[str], env: dict) -> str:
    try:
        p = subprocess.run(prefix + ["--version"], env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30)
        text = p.stdout.decode("utf-8", "replace")
        m = re.search(r"version: *\S+ *\([^)]*\)", text)
        if m:
            return m.group(0)
        lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
        for ln in lines:
            if "version" in ln.lower():
                return ln
        return lines[0] if lines else f"<no output, exit {p.returncode}>"
    except Exception as e:  # informational
        return f"<unknown: {e}>"


# newer llama.cpp also ships one `llama` binary with subcommands
# (app/llama.cpp: `llama completion|serve|bench|quantize ...`)
UNIFIED_SUBCMD = {"llama-completion": "completion", "llama-server": "serve",
                  "llama-quantize": "quantize", "llama-bench": "bench"}


# --run-with, split: what every tool runs through ([] runs them directly).
RUN_WITH: list[str] = []


def tool_cmd(root: str, name: str) -> list[str] | None:
    """Command prefix for a tool: [llama-X] or [llama, subcommand], after RUN_WITH."""
    p = find_binary(root, name)
    if p:
        return RUN_WITH + [p]
    if name in UNIFIED_SUBCMD:
        u = find_binary(root, "llama")
        if u:
            return RUN_WITH + [u, UNIFIED_SUBCMD[name]]
    return None


def completion_cmd(root: str) -> list[str] | None:
    """Non-interactive text completion tool.

    llama-completion (or `llama completion`) where it exists: from the release
    that added it, llama-cli is a chat-only client.  Before, llama-cli is the
    old `main` and takes -no-cnv.
    """
    return tool_cmd(root, "llama-completion") or tool_cmd(root, "llama-cli")


def ngl_arg(n: int) -> str:
    # llama.cpp CLI tools: a negative -ngl is not "all layers" in older versions
    return str(999 if n < 0 else n)


# ----------------------------------------------------------------------------
# steps
# ----------------------------------------------------------------------------

def cli_generate(args, env, model: str, n_tokens: int, what: str) -> dict:
    prefix = completion_cmd(args.bin_dir)
    if not prefix:
        raise SmokeError("neither llama-completion (nor `llama completion`) nor llama-cli found")
    binary = " ".join(prefix)
    cmd = prefix + ["-m", model, "-p", args.prompt, "-n", str(n_tokens), "-c", str(args.n_ctx),
           "-ngl", ngl_arg(args.n_gpu_layers), "-t", str(args.threads),
           "--temp", "0", "--top-k", "1", "--seed", "0", "--ignore-eos",
           "-no-cnv", "--no-display-prompt", "--simple-io"]
    # llama-completion prints the generated text through llama.cpp's log thread,
    # which does not always drain before the process exits: under load about one
    # run in four loses the tail of its output (seen with 0.3.36, and with archives
    # built before this script changed). A complete run ends with "\n\n"; a cut one
    # is run again, up to thirty times (with both cores busy, 3 runs of 10 ended
    # complete on the 2-core development machine, 2026-12-02).
    for attempt in range(1, 31):
        p = run_cmd(cmd, env, args.timeout, what)
        out = p.stdout.decode("utf-8", "replace")
        if out.endswith("\n\n") or out.endswith(" [end of text]\n"):
            break
        log(f"{what.upper()}_RETRY: output cut short ({out!r}), attempt {attempt}: llama.cpp's log thread did not drain before exit")
    err = p.stderr.decode("utf-8", "replace")
    # generated text, then "\n\n" (and " [end of text]\n" on EOS) from main.cpp/completion.cpp
    text = out
    if text.endswith("\n\n"):
        text = text[:-2]
    if text.endswith(" [end of text]\n"):
        text = text[: -len(" [end of text]\n")]
    tps = None
    m = None
    for line in err.splitlines():
        if re.search(r"(?<!prompt )\beval time\s*=", line):
            m = re.search(r"([\d.]+) tokens per second", line)
    if m:
        tps = float(m.group(1))
    res = {"binary": binary, "text": text, "tokens_per_s": tps, "cmd": cmd}
    tag = what.upper()
    log(f"{tag}_BIN: {binary}")
    log(f"{tag}_TEXT: {text!r}")
    if tps is not None:
        log(f"{tag}_TOKENS_PER_S: {tps:.2f}")
    if not text.strip():
        _dump(what, p.stdout, p.stderr)
        raise SmokeError(f"{what}: produced no text")
    return res


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_json(url: str, payload: dict | None, timeout: float) -> tuple[int, dict | str]:
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            body = r.read().decode("utf-8", "replace")
            code = r.status
    except urllib.error.HTTPError as e:
        body = e.read().decode("utf-8", "replace")
        code = e.code
    try:
        return code, json.loads(body)
    except ValueError:
        return code, body


def server_generate(args, env, model: str, n_tokens: int) -> dict:
    prefix = tool_cmd(args.bin_dir, "llama-server")
    if not prefix:
        raise SmokeError("llama-server not found")
    binary = " ".join(prefix)
    log(f"SERVER_BIN: {binary}")
    last_err = ""
    for attempt in range(3):
        port = free_port()
        cmd = prefix + ["-m", model, "--host", "127.0.0.1", "--port", str(port),
               "-c", str(args.n_ctx), "-np", "1", "-ngl", ngl_arg(args.n_gpu_layers),
               "-t", str(args.threads), "--no-webui"]
        log("RUN[server]: " + " ".join(_q(c) for c in cmd))
        logf = tempfile.TemporaryFile()
        popen_kw = {}
        if os.name != "nt":
            popen_kw["start_new_session"] = True
        proc = subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=logf, stderr=subprocess.STDOUT,
                                **popen_kw)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + args.timeout
            ready = False
            while time.monotonic() < deadline:
                if proc.poll() is not None:
                    break
                try:
                    code, body = http_json(base + "/health", None, timeout=5)
                    if code == 200:
                        ready = True
                        break
                except (urllib.error.URLError, ConnectionError, socket.timeout, OSError):
                    pass
                time.sleep(0.25)
            if not ready:
                logf.seek(0)
                server_log = logf.read().decode("utf-8", "replace")
                if proc.poll() is not None and re.search(r"(?i)address already in use|couldn't bind", server_log):
                    last_err = f"port {port} busy"
                    continue
                _dump("server", None, server_log)
                if proc.poll() is not None:
                    raise SmokeError(f"server: exited with status {proc.poll()} before becoming ready")
                raise SmokeError(f"server: not ready within {args.timeout}s")
            payload = {"prompt": args.prompt, "n_predict": n_tokens, "temperature": 0.0, "top_k": 1,
                       "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0, "seed": 0, "ignore_eos": True,
                       "cache_prompt": False, "return_tokens": True, "stream": False}
            t0 = time.perf_counter()
            code, body = http_json(base + "/completion", payload, timeout=args.timeout)
            wall = time.perf_counter() - t0
            if code != 200 or not isinstance(body, dict):
                raise SmokeError(f"server: /completion returned HTTP {code}: {str(body)[:2000]}")
            content = body.get("content", "")
            tokens = body.get("tokens")
            tokens_src = "return_tokens"
            if not tokens:  # very old servers: re-tokenize the text (approximate)
                tokens_src = "retokenized"
                c2, b2 = http_json(base + "/tokenize", {"content": content, "add_special": False}, args.timeout)
                tokens = b2.get("tokens", []) if isinstance(b2, dict) else []
            n_pred = body.get("tokens_predicted", len(tokens))
            timings = body.get("timings") or {}
            tps = timings.get("predicted_per_second")
            if tps is None:
                tps = n_pred / wall if wall > 0 else 0.0
            res = {"binary": binary, "text": content, "tokens": [int(t) for t in tokens],
                   "tokens_source": tokens_src, "tokens_predicted": n_pred, "tokens_per_s": tps,
                   "prompt_tokens": body.get("tokens_evaluated"), "stop_type": body.get("stop_type"),
                   "cmd": cmd}
            log(f"SERVER_TEXT: {content!r}")
            log("TOKENS: " + " ".join(map(str, res["tokens"])))
            log(f"TOKENS_PER_S: {float(tps):.2f}")
            if n_pred < n_tokens or len(res["tokens"]) < n_tokens and tokens_src == "return_tokens":
                raise SmokeError(f"server: only {n_pred} tokens predicted ({len(res['tokens'])} ids), "
                                 f"wanted {n_tokens}")
            return res
        finally:
            stop_process(proc)
            logf.close()
    raise SmokeError(f"server: could not start ({last_err})")


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is not None:
        return
    try:
        proc.send_signal(signal.SIGINT if os.name != "nt" else signal.CTRL_BREAK_EVENT)
        proc.wait(timeout=15)
    except Exception:
        pass
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=15)


def quantize(args, env, model: str, work: str) -> dict:
    prefix = tool_cmd(args.bin_dir, "llama-quantize")
    if not prefix:
        raise SmokeError("llama-quantize not found")
    binary = " ".join(prefix)
    base = os.path.splitext(os.path.basename(model))[0]
    out = os.path.join(work, f"{base}-{args.quant_type.lower()}.gguf")
    if os.path.exists(out):
        os.unlink(out)
    run_cmd(prefix + [model, out, args.quant_type, str(args.threads)], env, args.timeout, "quantize")
    if not os.path.isfile(out) or os.path.getsize(out) == 0:
        raise SmokeError(f"quantize: {out} not written")
    size = os.path.getsize(out)
    log(f"QUANTIZED: {out} ({size} bytes, from {os.path.getsize(model)})")
    return {"binary": binary, "out": out, "size": size}


def bench(args, env, model: str) -> dict:
    prefix = tool_cmd(args.bin_dir, "llama-bench")
    if not prefix:
        raise SmokeError("llama-bench not found")
    binary = " ".join(prefix)
    p = run_cmd(prefix + ["-m", model, "-p", "8", "-n", "8", "-r", "1", "-o", "json",
                 "-ngl", ngl_arg(args.n_gpu_layers), "-t", str(args.threads)], env, args.timeout, "bench")
    out = p.stdout.decode("utf-8", "replace")
    try:
        start = out.index("[")
        rows = json.loads(out[start:])
    except ValueError:
        _dump("bench", p.stdout, p.stderr)
        raise SmokeError("bench: could not parse JSON output")
    res = {"binary": binary, "rows": rows}
    for r in rows:
        npr, ngen, ts = r.get("n_prompt", 0), r.get("n_gen", 0), r.get("avg_ts")
        if npr and not ngen:
            res["pp_ts"] = ts
            log(f"BENCH_PP{npr}_TS: {ts:.2f}")
        elif ngen and not npr:
            res["tg_ts"] = ts
            log(f"BENCH_TG{ngen}_TS: {ts:.2f}")
    if "pp_ts" not in res or "tg_ts" not in res:
        raise SmokeError(f"bench: missing pp/tg rows in {rows}")
    return res


# ----------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bin_dir", help="directory with llama-cli / llama-server / llama-quantize / llama-bench")
    ap.add_argument("model", help="path to a .gguf model")
    ap.add_argument("--n-gpu-layers", type=int, default=0, help="layers to offload (default 0; -1 = all)")
    ap.add_argument("--tokens", type=int, default=16, help="tokens to generate (default 16)")
    ap.add_argument("--n-ctx", type=int, default=128, help="context size (default 128)")
    ap.add_argument("--prompt", default=DEFAULT_PROMPT)
    ap.add_argument("--threads", type=int, default=max(1, min(4, (os.cpu_count() or 2) // 2)),
                    help="threads for every tool (default: half the cores, 1..4)")
    ap.add_argument("--timeout", type=float, default=300.0, help="per-step timeout in seconds (default 300)")
    ap.add_argument("--quant-type", default="Q8_0", help="llama-quantize type (default Q8_0)")
    ap.add_argument("--work-dir", default=None, help="where the quantized model goes (default: a temp dir)")
    ap.add_argument("--json", dest="json_out", default=None, help="write results as JSON here")
    ap.add_argument("--expect-tokens", default=None,
                    help="space-separated ids (e.g. from smoke_llama_cpp_python.py) the server must produce")
    ap.add_argument("--strict", action="store_true", help="mismatches fail the run")
    ap.add_argument("--run-with", default="",
                    help='run every tool through this program, e.g. "qemu-aarch64 -L ROOT -cpu max"')
    for step in ("cli", "server", "quantize", "bench"):
        ap.add_argument(f"--skip-{step}", action="store_true")
    args = ap.parse_args()
    if args.tokens < 1:
        ap.error("--tokens must be >= 1")
    args.bin_dir = os.path.abspath(args.bin_dir)
    RUN_WITH[:] = shlex.split(args.run_with)
    model = os.path.abspath(args.model)

    result: dict = {"ok": False, "bin_dir": args.bin_dir, "model": model, "n_gpu_layers": args.n_gpu_layers,
                    "n_tokens_requested": args.tokens, "mismatches": []}
    t_start = time.perf_counter()
    tmp = None
    rc = 0
    try:
        if not os.path.isdir(args.bin_dir):
            raise SmokeError(f"not a directory: {args.bin_dir}")
        if not os.path.isfile(model):
            raise SmokeError(f"model not found: {model}")
        env = make_env(args.bin_dir)
        result["lib_dirs"] = lib_dirs(args.bin_dir)
        found = {n: find_binary(args.bin_dir, n) for n in
                 ("llama-cli", "llama-completion", "llama-server", "llama-quantize", "llama-bench", "llama")}
        result["binaries"] = found
        for n, p in found.items():
            log(f"FOUND {n}: {p or '-'}")
        vb = completion_cmd(args.bin_dir) or tool_cmd(args.bin_dir, "llama-server")
        if vb:
            result["version"] = version_of(vb, env)
            log(f"LLAMA_CPP_BUILD: {result['version']}")

        if not args.skip_cli:
            t0 = time.perf_counter()
            result["cli"] = cli_generate(args, env, model, args.tokens, "cli")
            result["cli"]["wall_s"] = round(time.perf_counter() - t0, 3)
        if not args.skip_server:
            t0 = time.perf_counter()
            result["server"] = server_generate(args, env, model, args.tokens)
            result["server"]["wall_s"] = round(time.perf_counter() - t0, 3)
            result["tokens"] = result["server"]["tokens"]
            result["tokens_per_s"] = result["server"]["tokens_per_s"]
        if "cli" in result and "server" in result:
            same = result["cli"]["text"] == result["server"]["text"]
            log(f"MATCH_CLI_SERVER: {'yes' if same else 'no'}")
            if not same:
                result["mismatches"].append("cli text != server text")
        if args.expect_tokens is not None and "tokens" in result:
            exp = [int(x) for x in args.expect_tokens.replace(",", " ").split()]
            same = exp == result["tokens"]
            log(f"MATCH_EXPECTED_TOKENS: {'yes' if same else 'no'}")
            if not same:
                result["mismatches"].append(f"server tokens {result['tokens']} != expected {exp}")
        if not args.skip_quantize:
            work = args.work_dir or (tmp := tempfile.mkdtemp(prefix="llama-smoke-"))
            os.makedirs(work, exist_ok=True)
            t0 = time.perf_counter()
            q = quantize(args, env, model, work)
            # make sure the quantized model loads and generates
            if not args.skip_cli and completion_cmd(args.bin_dir):
                q["cli"] = cli_generate(args, env, q["out"], min(args.tokens, 8), "quant_cli")
            elif not args.skip_server and tool_cmd(args.bin_dir, "llama-server"):
                q["server"] = server_generate(args, env, q["out"], min(args.tokens, 8))
            q["wall_s"] = round(time.perf_counter() - t0, 3)
            result["quantize"] = q
        if not args.skip_bench:
            t0 = time.perf_counter()
            result["bench"] = bench(args, env, model)
            result["bench"]["wall_s"] = round(time.perf_counter() - t0, 3)
        for m in result["mismatches"]:
            log(f"MISMATCH: {m}")
        if args.strict and result["mismatches"]:
            raise SmokeError("mismatches with --strict")
        result["ok"] = True
    except BaseException as e:  # noqa: BLE001
        if not isinstance(e, SmokeError):
            traceback.print_exc()
        print(f"SMOKE_FAIL: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        result["error"] = f"{type(e).__name__}: {e}"
        rc = 1
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    result["total_s"] = round(time.perf_counter() - t_start, 3)
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
