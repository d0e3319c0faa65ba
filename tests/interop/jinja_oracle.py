"""Renders Jinja templates with transformers' own chat-template environment (jinja2's
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, loop controls, {% generation %},
tojson, raise_exception, strftime_now), for test_jinja_interop.

Usage: jinja_oracle.py [CASES_JSON]   (stdin when no file is given)

Input: a JSON list of cases {"template": str, "context": object, "now": optional
"YYYY-MM-DDTHH:MM:SS" that pins strftime_now}.
stdout: a JSON list, one entry per case: {"text": str, "generation": [[begin, end], ...]} with
UTF-8 byte offsets, or {"error": str, "type": exception class name}.
"""
import json
import sys
from datetime import datetime

from transformers.utils.chat_template_utils import _compile_jinja_template


def render(case):
    template = _compile_jinja_template(case["template"])
    context = dict(case.get("context") or {})
    if case.get("now"):
        now = datetime.fromisoformat(case["now"])
        context["strftime_now"] = lambda fmt: now.strftime(fmt)
    blocks, spans = [], []
    with template.environment.activate_tracker(blocks, spans):
        for block in template.generate(**context):
            blocks.append(block)
    text = "".join(blocks)

    def byte_offset(i):
        return len(text[:i].encode("utf-8"))

    return {"text": text, "generation": [[byte_offset(b), byte_offset(e)] for b, e in spans]}


def main():
    out = []
    if len(sys.argv) > 1:
        with open(sys.argv[1], encoding="utf-8") as f:
            cases = json.load(f)
    else:
        cases = json.load(sys.stdin)
    for case in cases:
        try:
            out.append(render(case))
        except Exception as e:  # the test compares errors by kind, not by message
            out.append({"error": str(e), "type": type(e).__name__})
    json.dump(out, sys.stdout, ensure_ascii=True)


if __name__ == "__main__":
    main()
