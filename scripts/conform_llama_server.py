"""``modelwire conform`` against llama.cpp's own ``llama-server`` (not part of CI: the build
takes 30-50 minutes on two cores; it is done once per machine and kept).

    python scripts/conform_llama_server.py [--work ~/.cache/llama-server-tiny] [--port 4713]

1. Builds ``llama-server`` (CPU only) from the llama.cpp sources inside the llama-cpp-python
   sdist (downloaded with pip), unless ``WORK/build/bin/llama-server`` is there.
2. Writes ``WORK/tiny-qwen2.gguf``: a random-weight, 2-layer qwen2 model with the sdist's own
   Qwen2 vocabulary and Qwen2.5-Instruct chat template, so llama.cpp really tokenizes, runs a
   transformer, samples and parses tool calls (the text is noise).
3. Starts it on 127.0.0.1, probes its Chat Completions route, writes a profile, probes again
   through the profile, probes its Anthropic route, and stops it. The reports are printed.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

VERSION = "0.3.36"
SOURCES = f"llama_cpp_python-{VERSION}/vendor/llama.cpp"


def build(work: Path) -> Path:
    exe = work / "build" / "bin" / "llama-server"
    if exe.is_file():
        return exe
    work.mkdir(parents=True, exist_ok=True)
    if not (work / f"llama_cpp_python-{VERSION}").is_dir():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-deps",
                "--no-binary",
                ":all:",
                f"llama-cpp-python=={VERSION}",
                "-d",
                str(work),
            ],
            check=True,
        )
        subprocess.run(["tar", "xzf", f"llama_cpp_python-{VERSION}.tar.gz"], cwd=work, check=True)
    flags = "-O1 -DNDEBUG"  # -O1: the build stays near 30-50 minutes on two cores
    options = [
        "-DGGML_NATIVE=ON",
        "-DGGML_CUDA=OFF",
        "-DGGML_METAL=OFF",
        "-DLLAMA_BUILD_SERVER=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_UI=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_OPENSSL=OFF",
        "-DLLAMA_CURL=OFF",
        "-DBUILD_SHARED_LIBS=OFF",
    ]
    subprocess.run(
        [
            "cmake",
            "-S",
            SOURCES,
            "-B",
            "build",
            "-DCMAKE_BUILD_TYPE=Release",
            f"-DCMAKE_C_FLAGS_RELEASE={flags}",
            f"-DCMAKE_CXX_FLAGS_RELEASE={flags}",
            *options,
        ],
        cwd=work,
        check=True,
    )
    subprocess.run(["cmake", "--build", "build", "--target", "llama-server", "-j2"], cwd=work, check=True)
    return exe


_TINY_MODEL = """
import sys
from pathlib import Path
import numpy as np
from gguf import GGUFReader, GGUFWriter

src, out = Path(sys.argv[1]), sys.argv[2]
vocab = GGUFReader(str(src / "models" / "ggml-vocab-qwen2.gguf"))
get = lambda name: vocab.fields[name].contents()
tokens = get("tokenizer.ggml.tokens")
embd, heads, kv_heads, ff, layers = 64, 4, 2, 128, 2
kv = kv_heads * (embd // heads)
rng = np.random.default_rng(7)
w = lambda *shape: (rng.standard_normal(shape) * 0.02).astype(np.float32)
ones = lambda n: np.ones(n, dtype=np.float32)
g = GGUFWriter(out, "qwen2")
g.add_name("tiny-random-qwen2")
g.add_context_length(4096)
g.add_embedding_length(embd)
g.add_block_count(layers)
g.add_feed_forward_length(ff)
g.add_head_count(heads)
g.add_head_count_kv(kv_heads)
g.add_rope_freq_base(1000000.0)
g.add_layer_norm_rms_eps(1e-6)
g.add_file_type(0)
g.add_tokenizer_model(get("tokenizer.ggml.model"))
g.add_tokenizer_pre(get("tokenizer.ggml.pre"))
g.add_token_list(tokens)
g.add_token_types(get("tokenizer.ggml.token_type"))
g.add_token_merges(get("tokenizer.ggml.merges"))
for key, add in (
    ("tokenizer.ggml.bos_token_id", g.add_bos_token_id),
    ("tokenizer.ggml.eos_token_id", g.add_eos_token_id),
    ("tokenizer.ggml.padding_token_id", g.add_pad_token_id),
):
    if key in vocab.fields:
        add(int(get(key)))
g.add_add_bos_token(False)
g.add_chat_template((src / "models" / "templates" / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text())
g.add_tensor("token_embd.weight", w(len(tokens), embd))
g.add_tensor("output_norm.weight", ones(embd))
g.add_tensor("output.weight", w(len(tokens), embd))
for i in range(layers):
    for name, tensor in (
        ("attn_norm.weight", ones(embd)), ("attn_q.weight", w(embd, embd)), ("attn_q.bias", w(embd)),
        ("attn_k.weight", w(kv, embd)), ("attn_k.bias", w(kv)), ("attn_v.weight", w(kv, embd)), ("attn_v.bias", w(kv)),
        ("attn_output.weight", w(embd, embd)), ("ffn_norm.weight", ones(embd)), ("ffn_gate.weight", w(ff, embd)),
        ("ffn_up.weight", w(ff, embd)), ("ffn_down.weight", w(embd, ff)),
    ):
        g.add_tensor(f"blk.{i}.{name}", tensor)
g.write_header_to_file()
g.write_kv_data_to_file()
g.write_tensors_to_file()
g.close()
"""


def tiny_model(work: Path) -> Path:
    out = work / "tiny-qwen2.gguf"
    if out.is_file():
        return out
    venv = work / "venv"
    if not (venv / "bin" / "python").is_file():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "numpy", str(work / SOURCES / "gguf-py")], check=True)
    subprocess.run([str(venv / "bin" / "python"), "-c", _TINY_MODEL, str(work / SOURCES), str(out)], check=True)
    return out


def serve(exe: Path, model: Path, port: int) -> subprocess.Popen:
    # --jinja: the model's own chat template (tools included); -n 48 caps generated tokens; greedy.
    args = [
        str(exe),
        "-m",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--jinja",
        "-c",
        "4096",
        "-np",
        "1",
        "-t",
        "1",
        "-n",
        "48",
        "--temp",
        "0",
        "--alias",
        "tiny-qwen2",
    ]
    log = open(exe.parent.parent.parent / f"llama-server-{port}.log", "wb")  # noqa: SIM115 - kept open for the server
    process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(120):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1) as answer:
                if answer.status == 200:
                    return process
        except OSError:
            time.sleep(0.5)
    process.kill()
    raise SystemExit(f"llama-server did not come up on port {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path.home() / ".cache" / "llama-server-tiny")
    parser.add_argument("--port", type=int, default=4713)
    args = parser.parse_args()
    exe, model = build(args.work), tiny_model(args.work)
    process = serve(exe, model, args.port)
    base = f"http://127.0.0.1:{args.port}"
    modelwire = [sys.executable, "-m", "modelwire", "conform"]
    try:
        with tempfile.TemporaryDirectory() as folder:
            env = {**os.environ, "MODELWIRE_DEBUG": "0"}
            for step in (
                ["--base-url", base + "/v1", "-m", "tiny-qwen2", "--write-profile", "llama"],
                ["--profile", "llama"],
                ["--base-url", base, "-m", "tiny-qwen2", "--protocol", "anthropic"],
            ):
                print(f"$ modelwire conform {' '.join(step)}", flush=True)
                subprocess.run(modelwire + step, cwd=folder, env=env, check=True)
                print(flush=True)
            print(Path(folder, "modelwire.toml").read_text())
    finally:
        process.terminate()
        process.wait(10)


if __name__ == "__main__":
    main()
