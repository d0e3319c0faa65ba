"""llama.cpp's generation speed on one GGUF file, in a process of its own (no PyTorch loaded beside it), for
bench/generate_peer.py.

usage: python bench/llama_cpp_peer.py FILE.gguf PROMPT_TOKENS NEW_TOKENS REPEATS THREADS
Prints {"prefill_tokens_per_s", "decode_tokens_per_s"}: medians over REPEATS after one warm-up pass, greedy,
llama.cpp's default f16 KV cache.
"""
import json
import statistics
import sys
import time

import llama_cpp
import numpy as np


def main():
    path, prompt_tokens, new_tokens, repeats, threads = sys.argv[1], *map(int, sys.argv[2:6])
    model = llama_cpp.Llama(model_path=path, n_ctx=prompt_tokens + new_tokens, n_batch=prompt_tokens,
                            n_threads=threads, n_threads_batch=threads, verbose=False)
    ids = [int(i) for i in np.random.RandomState(1234).randint(3, model.n_vocab(), prompt_tokens)]
    prefill, decode = [], []
    for i in range(repeats + 1):  # the first pass warms up
        model.reset()
        t0 = time.perf_counter()
        model.eval(ids)
        t1 = time.perf_counter()
        for _ in range(new_tokens - 1):
            # the last position's logits, read in place (without logits_all nothing is copied out)
            logits = np.ctypeslib.as_array(model._ctx.get_logits(), shape=(model.n_vocab(),))
            model.eval([int(np.argmax(logits))])
        t2 = time.perf_counter()
        if i:
            prefill.append(prompt_tokens / (t1 - t0))
            decode.append(new_tokens / (t2 - t1))
    model.close()
    print(json.dumps({"prefill_tokens_per_s": statistics.median(prefill),
                      "decode_tokens_per_s": statistics.median(decode)}))


if __name__ == "__main__":
    main()
