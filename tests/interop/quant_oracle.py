"""Oracle for tests/interop/test_quant_interop: bitsandbytes' own quantisation of the same tensors.

tensors IN OUT KIND DOUBLE: IN holds the weights, OUT our pieces (export/quant_export.h). For each
weight, quantises it with bitsandbytes (CPU backend) and counts where the bytes differ; dequantises
bitsandbytes' state and reports the largest difference from ours.
model ORIG DEQ KIND DOUBLE: ORIG a model folder, DEQ our dequantised copy of it; for each tensor of
DEQ that differs from ORIG, bitsandbytes' dequantize(quantize(W)) against ours.
The last stdout line is JSON.
"""
import json
import sys

import bitsandbytes.functional as F
import torch
from safetensors.torch import load_file


def mismatches(a, b):
    a = a.reshape(-1).contiguous()
    b = b.reshape(-1).contiguous()
    if a.numel() != b.numel():
        return -1
    return int((a.view(torch.uint8) != b.view(torch.uint8)).sum()) if a.dtype == b.dtype else -2


def max_diff(a, b):
    return float((a.float().reshape(-1) - b.float().reshape(-1)).abs().max()) if a.numel() else 0.0


def max_rel_diff(a, b):
    """Largest |a - b| / |a| (0 where both are 0): bf16 rounding is 2^-8 relative at most."""
    a = a.float().reshape(-1)
    b = b.float().reshape(-1)
    d = (a - b).abs() / a.abs().clamp(min=1e-30)
    return float(torch.where((a == 0) & (b == 0), torch.zeros_like(d), d).max()) if a.numel() else 0.0


def bnb_4bit(w, kind, double):
    q, st = F.quantize_4bit(w, blocksize=64, quant_type=kind, compress_statistics=double)
    return q, st, F.dequantize_4bit(q, st)  # in w's dtype


def tensors(path_in, path_out, kind, double):
    ws = load_file(path_in)
    ours = load_file(path_out)
    report = {}
    for name, w in ws.items():
        if w.dim() != 2:
            continue
        r = {}
        if kind == "int8":
            cb, scb, _ = F.int8_vectorwise_quant(w.clone())
            r["data"] = mismatches(cb, ours[name + ".data"])
            r["absmax"] = mismatches(scb, ours[name + ".absmax"])
            deq = F.int8_vectorwise_dequant(cb, scb)
        else:
            q, st, deq = bnb_4bit(w, kind, double)
            r["data"] = mismatches(q, ours[name + ".data"])
            r["absmax"] = mismatches(st.absmax, ours[name + ".absmax"])
            if double:
                r["absmax2"] = mismatches(st.state2.absmax, ours[name + ".absmax2"])
                r["code2"] = mismatches(st.state2.code, ours[name + ".code2"])
                r["offset"] = mismatches(st.offset.reshape(1).float(), ours[name + ".offset"])
        if w.dtype == torch.float32:
            # Exact: the same fp32 products; bf16: bitsandbytes' fp32 values rounded to bf16, equal
            # as numbers (rounding equal fp32 values cannot differ; FP4's code has a -0, so the
            # sign of a zero may, which no product sees).
            r["dequant"] = max_diff(deq, ours[name + ".dequant"])
            r["dequant_bf16"] = max_diff(deq.to(torch.bfloat16), ours[name + ".dequant_bf16"])
        else:
            # A bf16 weight dequantises into bf16 in bitsandbytes (its own arithmetic there):
            # against our bf16 output within one bf16 rounding. No fp32 comparison exists for it.
            r["dequant_bf16_rel"] = max_rel_diff(deq, ours[name + ".dequant_bf16"])
        r["elements"] = w.numel()
        report[name] = r
    return report


def model(orig_dir, deq_dir, kind, double):
    orig = load_file(orig_dir + "/model.safetensors")
    ours = load_file(deq_dir + "/model.safetensors")
    report = {}
    for name, w in ours.items():
        base = orig.get(name)
        if base is None or base.dim() != 2 or torch.equal(base.float(), w):
            continue
        # GPT-2's Conv1D weights are [in, out]: quantised as [out, in], as transformers does.
        conv1d = name.endswith(("c_attn.weight", "c_proj.weight", "c_fc.weight"))
        src = base.t().contiguous() if conv1d else base
        if kind == "int8":
            cb, scb, _ = F.int8_vectorwise_quant(src.clone())
            deq = F.int8_vectorwise_dequant(cb, scb)
        else:
            _, _, deq = bnb_4bit(src, kind, double)
        deq = deq.float()
        if conv1d:
            deq = deq.t()
        report[name] = {"dequant": max_diff(deq, w), "elements": w.numel()}
    return report


if __name__ == "__main__":
    mode, a, b, kind, double = sys.argv[1:6]
    fn = tensors if mode == "tensors" else model
    print(json.dumps(fn(a, b, kind, double == "1")))
